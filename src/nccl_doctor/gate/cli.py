"""The command line of the gate: ``check --gate`` and ``gate plan``.

``check --gate`` prints one node's verdict (``docs/gate.md``) and exits 0
when the node may take jobs, 1 when it must not (a Slurm prolog's non-zero
exit drains the node and requeues the job). ``gate plan`` turns verdicts into
the scheduler's commands, and runs them with ``--apply``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nccl_doctor.errors import EvidenceError, UsageError

if TYPE_CHECKING:  # the verdict loads the rules' report: not for building the parser
    from nccl_doctor.gate.verdict import NodeVerdict, Policy

EXIT_OK, EXIT_BLOCKS = 0, 1
#: The largest JSON file read as a verdict (a verdict is a few KiB).
_MAX_JSON = 16 << 20

_PLAN_EPILOG = """\
VERDICT is a file `nccl-doctor check --gate` wrote, or a folder of them (*.json). For a node
given more than once, the latest verdict counts.

examples:
  nccl-doctor gate plan verdicts/                       # what to exclude, drain, taint
  sbatch $(nccl-doctor gate plan verdicts/ --format json | jq -r '.exclude // empty') job.sh
  nccl-doctor gate plan verdicts/ --target slurm --apply   # run the scontrol lines

exit codes:
  0  planned (and, with --apply, every command exited 0)
  1  --apply: a command failed (its exit status is shown)
  2  could not run: a bad verdict, a missing scontrol/kubectl for --apply (nothing was run)"""


def add_check_options(check: argparse.ArgumentParser) -> None:
    """``--gate`` and its options, on the ``check`` parser."""
    group = check.add_argument_group("node gate (Slurm prolog/epilog, Kubernetes preflight)")
    group.add_argument(
        "--gate",
        action="store_true",
        help="print the node's verdict per check (JSON unless --format text) and exit 0/1 "
        "for a scheduler (docs/gate.md)",
    )
    group.add_argument(
        "--gate-fail-on",
        choices=("critical", "warning"),
        default="critical",
        help="exit 1 when the node's status is at least this (default: critical)",
    )
    group.add_argument(
        "--gate-fail-unknown",
        action="store_true",
        help="also exit 1 when a check could not read its evidence (UNKNOWN), as on a GPU "
        "partition where a node whose GPUs cannot be read must not run jobs",
    )
    group.add_argument(
        "--gate-node",
        metavar="NAME",
        help="the scheduler's name of the node (Slurm NodeName, Kubernetes node); default: "
        "the host name the check read",
    )
    group.add_argument(
        "--from",
        dest="from_paths",
        action="append",
        metavar="PATH",
        help="gate saved evidence (a bundle of `check -o`, logs, dmesg) or a saved verdict "
        "instead of the live node; repeat for more files of the same node",
    )


def _json_file(path: str) -> Any:
    """The JSON object in ``path``, or ``None`` when it is not a small JSON file."""
    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size > _MAX_JSON:
            return None
        text = p.read_text(encoding="utf-8", errors="replace").lstrip()
    except OSError:
        return None
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _node_of(facts: Any, hosts: tuple[str, ...]) -> str:
    from nccl_doctor.facts.live import CaptureHost  # noqa: PLC0415

    names = sorted({h.hostname for h in facts.of(CaptureHost)})
    if len(names) == 1:
        return str(names[0])
    if not names and len(hosts) == 1:
        return hosts[0]
    seen = f" (it names {', '.join(names or hosts)})" if names or hosts else ""
    raise UsageError(
        f"cannot tell which node the evidence is from{seen}", "name it: --gate-node NAME"
    )


def _saved(paths: list[str], node: str | None) -> NodeVerdict:
    """The verdict of saved evidence, or a saved verdict read back."""
    from nccl_doctor.evidence.reader import read_paths  # noqa: PLC0415 -- loads the parsers
    from nccl_doctor.gate.verdict import KIND, build, verdict_from_json  # noqa: PLC0415
    from nccl_doctor.pipeline import diagnose_with_facts  # noqa: PLC0415 -- loads the rules

    if len(paths) == 1 and (data := _json_file(paths[0])) is not None:
        if data.get("kind") == KIND:
            return verdict_from_json(data)
        if "findings" in data and "schema_version" in data:
            raise EvidenceError(
                f"{paths[0]} is a report, not evidence: it does not say what the check read",
                "gate the bundle instead: `nccl-doctor check -o node.tgz`, then "
                "`nccl-doctor check --gate --from node.tgz`",
            )
    result = read_paths(paths, line_totals=False)
    if not result.sections:
        why = "; ".join(f"{n.source}: {n.message}" for n in result.notes) or "nothing read"
        raise EvidenceError(
            f"no evidence to gate in {', '.join(paths)} ({why})",
            "give a bundle of `nccl-doctor check -o`, its folder, or a verdict JSON",
        )
    report, facts = diagnose_with_facts(result)
    name = node or _node_of(facts, report.hosts)
    return build(report, facts, node=name, source=", ".join(paths))


def _live(args: argparse.Namespace) -> NodeVerdict:
    from nccl_doctor import live_check  # noqa: PLC0415
    from nccl_doctor.gate.verdict import build  # noqa: PLC0415

    report, facts, cap = live_check.check_with_facts(
        timeout_s=args.timeout, nvml_module=live_check.nvml_module_name(), keep=args.output
    )
    if line := live_check.headline(cap.snapshot):
        sys.stderr.write(line + "\n")
    node = args.gate_node or str(cap.manifest.get("hostname") or "")
    return build(report, facts, node=node, source="live")


def cmd_check_gate(args: argparse.Namespace) -> int:
    """``check --gate``: the verdict on stdout, a one-line summary on stderr, the gate's exit."""
    from nccl_doctor.gate.render import verdict_text  # noqa: PLC0415
    from nccl_doctor.gate.verdict import Policy, verdict_json  # noqa: PLC0415

    fmt = args.format or "json"
    if fmt not in ("json", "text"):
        raise UsageError(f"--gate prints json or text, not {fmt}", "use --format json or text")
    if args.from_paths and args.output:
        raise UsageError("-o saves what a live check read; --from reads saved evidence", "drop -o")
    verdict = _saved(args.from_paths, args.gate_node) if args.from_paths else _live(args)
    if args.gate_node:
        verdict = replace(verdict, node=args.gate_node)
    policy = Policy(args.gate_fail_on, args.gate_fail_unknown)
    if fmt == "json":
        sys.stdout.write(json.dumps(verdict_json(verdict, policy), indent=1) + "\n")
    else:
        sys.stdout.write(verdict_text(verdict, policy, verbosity=args.verbosity))
    blocks = policy.blocks(verdict)
    if args.verbosity >= 0 or blocks:
        sys.stderr.write(summary(verdict, policy) + "\n")
    return EXIT_BLOCKS if blocks and not args.exit_zero else EXIT_OK


def summary(verdict: NodeVerdict, policy: Policy) -> str:
    """``gate: NODE STATUS, exit N: CHECK STATUS: message -> step``, for logs."""
    blocks = policy.blocks(verdict)
    head = f"gate: {verdict.node} {verdict.status}, exit {1 if blocks else 0}"
    counts = verdict.counts()
    if counts["UNKNOWN"]:
        head += f" ({counts['UNKNOWN']} check(s) UNKNOWN)"
    top = verdict.headline
    if top is None or top.status == "INFO":
        return head
    step = f" -> {top.remediation.action}" if top.remediation else ""
    return f"{head}: {top.id} {top.status}: {top.message[:160]}{step}"


def gate_only_options(args: argparse.Namespace) -> None:
    """Refuse the gate's options without ``--gate``."""
    used = [
        flag
        for flag, value in (
            ("--from", args.from_paths),
            ("--gate-node", args.gate_node),
            ("--gate-fail-unknown", args.gate_fail_unknown),
            ("--gate-fail-on", args.gate_fail_on != "critical"),
        )
        if value
    ]
    if used:
        raise UsageError(
            f"{', '.join(used)} needs --gate",
            "add --gate (to diagnose a saved bundle instead: nccl-doctor diagnose BUNDLE)",
        )


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``gate`` command and its ``plan`` verb."""
    from nccl_doctor.fleet.names import EFFECTS  # noqa: PLC0415 -- not the actions: keeps start-up fast

    gate: argparse.ArgumentParser = sub.add_parser(
        "gate",
        help="turn node verdicts into the scheduler's commands (exclude, drain, taint)",
        description="Turn the node verdicts of `check --gate` into scheduler commands.",
        epilog="example:\n  nccl-doctor gate plan verdicts/\n\n`nccl-doctor gate plan --help` "
        "says more.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = gate.add_subparsers(dest="gate_command", metavar="VERB", parser_class=type(gate))
    plan = verbs.add_parser(
        "plan",
        help="the --exclude list, scontrol drain lines and kubectl taints, with their evidence",
        description="From node verdicts: the --exclude= argument for sbatch/srun, one scontrol "
        "drain line and one Kubernetes taint, label and reason annotation per node to act on, "
        "each with its evidence. Printed to paste; run with --apply.",
        epilog=_PLAN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plan.add_argument("verdicts", nargs="+", metavar="VERDICT", help="verdict files or folders")
    plan.add_argument("--format", choices=("text", "json"), default="text")
    plan.add_argument(
        "--fail-on",
        choices=("critical", "warning"),
        default="critical",
        help="act on nodes at least this bad (default: critical)",
    )
    plan.add_argument(
        "--fail-unknown",
        action="store_true",
        help="also act on nodes with a check that could not read its evidence",
    )
    plan.add_argument(
        "--target",
        choices=("slurm", "k8s", "all"),
        default="all",
        help="which scheduler's commands to print and --apply (default: all)",
    )
    plan.add_argument(
        "--k8s-effect",
        choices=EFFECTS,
        default="NoSchedule",
        help="the taint's effect (default NoSchedule; NoExecute also evicts running pods)",
    )
    plan.add_argument(
        "--apply",
        action="store_true",
        help="run the commands (scontrol/kubectl found on PATH, never a shell); default: print",
    )
    plan.add_argument(
        "--apply-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="deadline of each applied command in seconds (default 30)",
    )
    return gate


def _verdict_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            files.extend(sorted(p.glob("*.json")))
        elif p.is_file():
            files.append(p)
        else:
            raise EvidenceError(f"{path}: no such file or folder", "give verdict files or folders")
    if not files:
        raise EvidenceError(
            f"no verdict files in {', '.join(paths)}", "write them with `check --gate > FILE`"
        )
    return files


def load_records(paths: list[str]) -> list[Any]:
    """One record per verdict file; a file that is not a verdict is a one-line error."""
    from nccl_doctor.fleet.actions import records_from_verdict  # noqa: PLC0415
    from nccl_doctor.gate.verdict import verdict_from_json  # noqa: PLC0415

    records = []
    for file in _verdict_files(paths):
        data = _json_file(str(file))
        if data is None:
            raise EvidenceError(
                f"{file}: not a node verdict (not a JSON object)",
                "pass the JSON `nccl-doctor check --gate` prints",
            )
        try:
            records.append(records_from_verdict(verdict_from_json(data), str(file)))
        except EvidenceError as exc:
            raise EvidenceError(f"{file}: {exc.message}", exc.hint) from None
    return records


def cmd(args: argparse.Namespace) -> int:
    """``gate plan``: print the plan; with ``--apply`` run it and report each command."""
    from nccl_doctor.fleet import actions  # noqa: PLC0415
    from nccl_doctor.fleet.apply import apply  # noqa: PLC0415

    if args.gate_command != "plan":
        raise UsageError("gate needs a verb", "nccl-doctor gate plan VERDICT...")
    if not 0 < args.apply_timeout <= 600:
        raise UsageError("--apply-timeout must be above 0 and at most 600 s", "e.g. 30")
    targets = frozenset({"slurm", "k8s"} if args.target == "all" else {args.target})
    plan = actions.plan(
        load_records(args.verdicts),
        fail_on=args.fail_on,
        fail_unknown=args.fail_unknown,
        effect=args.k8s_effect,
    )
    ran = apply(plan, targets, timeout_s=args.apply_timeout) if args.apply else []
    if args.format == "json":
        data = actions.plan_json(plan)
        data["commands"] = [c for c in data["commands"] if c["target"] in targets]
        if args.apply:
            data["applied"] = [
                {"line": r.command.line, "tool": r.tool, "exit_code": r.returncode,
                 "message": r.message}
                for r in ran
            ]  # fmt: skip
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        sys.stdout.write(actions.plan_text(plan, targets))
        if args.apply:
            sys.stdout.write("\n" if ran else "\nnothing to apply\n")
        for r in ran:
            status = f"exit {r.returncode}" if r.returncode is not None else "did not finish"
            tail = f": {r.message}" if r.message and not r.ok else ""
            sys.stdout.write(f"ran: {r.command.line} -> {status}{tail}\n")
    return EXIT_OK if all(r.ok for r in ran) else EXIT_BLOCKS
