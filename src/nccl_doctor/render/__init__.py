"""Renderers: reports and parse results to text, JSON, Markdown. No rule logic here."""
