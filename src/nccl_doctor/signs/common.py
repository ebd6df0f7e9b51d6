"""Signs several rule families read."""

from __future__ import annotations

from nccl_doctor.facts.signs import Sign, sign
from nccl_doctor.signs.languages import HANG_OTHER

#: Where a variable's name starts: no ASCII letter, digit or underscore before it. (Unicode's
#: \b takes a Chinese or Japanese character for a word character, so "设置NCCL_P2P_DISABLE=1"
#: has no \b before the name.)
NAME_START = r"(?<![A-Za-z0-9_])"
#: A character of a value written NAME=value, in ASCII ("=1以后" ends the value at "1").
VALUE_CHAR = r"[\x21\x23-\x26\x28-\x5f\x61-\x7e]"


def setting(family: str, name: str) -> Sign:
    """The sign of ``NAME=value`` for one variable, in any text (a command line, an export, a
    sentence), capturing the value. One sign per variable: a line often sets several, and a
    sign hits a line once, so one general NAME=value sign would see only the first."""
    return sign(
        f"{family}.env_{name.lower()}",
        # (a sentence's own stop after the value is not part of it: "NCCL_SOCKET_IFNAME=ib0.")
        # (the value's characters: printable ASCII but quotes and backquotes)
        rf"{NAME_START}{name}=(?P<value>{VALUE_CHAR}{{0,300}}(?![.,;:)]){VALUE_CHAR})",
        f"{name}=value written in a command line, an export or a sentence: the value",
        case=True,
    )


#: The words of a job that sits there (HANG_WORDS adds "deadlock", HANG_POINTS does not).
_SITS = (
    r"hangs?|hanging|hung|freez\w{0,20}|froze|never (?:returns|finishes)"
    # (not held to a release: "we're stuck on an old torch", "stuck with the older driver")
    r"|stuck(?! (?:on|with) (?:an? |the |this |that |our |my )?(?:old|older|outdated|legacy"
    r"|previous|earlier)\b)"
)

HANG_WORDS = sign(
    "common.hang_words",
    # (Chinese: stuck, stuck dead, stuck at, hangs; no word boundary between its characters;
    # not the 卡 of a card: 显卡在 "the GPU is at", 网卡在 "the NIC is at", 两张卡在训练 "two
    # cards are training", 3 号卡在 "card 3 is")
    rf"\b(?:{_SITS}|deadlock\w{{0,20}})\b|(?<![显网声张块号])卡(?:住|死|在)|挂起|{HANG_OTHER}",
    "a person saying the job sits there rather than dies",
)
HANG_POINTS = sign(
    "common.hang_points",
    rf"\b(?:{_SITS})\b[^:\n]{{0,60}}:\s*$",
    "a sentence of those words (not 'deadlock') that ends in a colon: it points at the lines "
    "that follow ('it hangs at:', 'it never returns from:', then the call or the last line "
    "printed)",
)
CARRIES_ON = sign(
    "common.carries_on",
    r"\b(?:continu(?:ing|es)|retrying|will retry|trying (?:again|another|port|\d+)|falling back"
    r"|fall(?:s|ing)? back|ignor(?:ing|ed)|skipping)\b",
    "the program says it handled the error and goes on (a warning, not the failure)",
)
ALARMING = sign(
    "common.alarming",
    r"\b(?:fail\w{0,6}|errors?|errno|unable|cannot|can't|not (?:supported|found|available)"
    r"|deprecated|warn\w{0,7}|no plugin)\b",
    "a line that reads like trouble (whether it is one, the catalogue's harmless rows say)",
)

#: The job ran a long while before it failed ("healthy for ~9h, then", "after 9 hours of
#: training", "after 20000 steps"): its ranks had connected and carried data, so how they
#: connect (a GID, an interface, a transport's set-up) is not what failed.
RAN_A_WHILE = sign(
    "common.ran_a_while",
    r"\b(?:after|for) (?:~ ?|about |around |roughly |over |almost |nearly )?\d{1,5}(?:\.\d)? ?"
    r"(?:hours?|hrs?|h|days?)\b(?! ago)"
    r"|\bafter (?:~ ?|about |around )?(?:\d{1,3}(?:,\d{3})+|\d{4,9}|thousands of|several thousand)"
    r" (?:steps|iterations|iters|batches)\b",
    "the reporter says the job ran hours, days or thousands of steps before it failed",
)

#: A picture the reporter linked instead of pasting text (a GitHub issue's screenshot): its
#: text is part of the evidence and nothing here reads it. Markdown's and HTML's image syntax
#: and the hosts issue trackers upload pictures to; not any link to an image file (a log
#: names the plots it saves).
IMAGE_LINKED = sign(
    "common.image_linked",
    r"!\[[^\]\n]{0,200}\]\(|<img\b[^>\n]{0,400}\bsrc="
    r"|\b(?:user-images\.githubusercontent\.com|github\.com/user-attachments/assets"
    r"|github\.com/[\w.-]{1,100}/[\w.-]{1,100}/assets/\d{1,12}|i\.imgur\.com)/",
    "a screenshot or other picture linked where the evidence is: its text is not read",
)
