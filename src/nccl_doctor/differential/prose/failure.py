"""A failure in any words: the last resort of the prose symptom table."""

from __future__ import annotations

from nccl_doctor.differential.prose.words import ProseSymptom, rx, says_failure
from nccl_doctor.signs.languages import FAILED_OTHER

#: The reporter says it fails, in any words; the last resort of :data:`PROSE_SYMPTOMS`.
FAILURE = ProseSymptom(
    "failure",
    rx(
        r"\b(?:fail\w*|crash\w*|errors?|dies|died|kills?|abort\w*|broken|breaks)\b"
        # "when Ray sets it, things break"
        r"|\b(?:things|everything|it all|stuff) (?:will |would )?break\b"
        r"|\b(?:does ?n[o']t|do ?n[o']t|not|stops?|stopped) work(?:s|ing)?\b"
        # an attempt that did not succeed ("I've been unsuccessful", "tried, without success")
        r"|\bunsuccessful\w*|\b(?:without|with no|no) success\b"
        # trouble met ("I'm having trouble with two GPUs", "we ran into issues when ...")
        r"|\b(?:having|have|had|ran into|run(?:ning)? into|hit(?:ting)?|fac(?:e|ing)"
        r"|encounter\w*|experienc\w*) (?:some |a |an |the same |similar |strange |weird )?"
        r"(?:trouble|problems?|issues?|difficult(?:y|ies))\b"
        # a job that exits silently; a version mismatch said as the failure
        r"|\bexit(?:s|ed)?\b.{0,20}\bwithout (?:any )?(?:message|error|output|log)"
        # it ends before its time ("exits immediately on 2 nodes", "the processes terminate
        # unexpectedly", "torchrun quits after a few seconds", "the run is killed as soon as
        # all_reduce starts", "the workers go down one after another", "blows up")
        r"|\b(?:exits?|exited|quits?|terminat(?:es?|ed)|shuts? down|dies) (?:immediately"
        r"|right away|at once|unexpectedly|abruptly|early|prematurely|suddenly"
        r"|after (?:a few|some|\d{1,4}) seconds)\b"
        r"|\b(?:unexpectedly|abruptly|suddenly|prematurely) (?:exits?|exited|quits?|quit"
        r"|terminat(?:es?|ed)|ends?|ended|stops?|stopped)\b"
        # (not stopped by its user: "was killed by me with Ctrl-C"; not a machine taken down
        # on purpose: "the nodes go down for maintenance"; not a loss that diverges)
        r"|\b(?:is|was|gets|got|are|were|get) (?:\w+ )?(?:killed|interrupted)\b"
        r"(?! by (?:me|us|the user|hand|ctrl|keyboard))"
        r"|\b(?:workers?|ranks?|process(?:es)?|nodes?|jobs?|pods?) (?:go|goes|went|going) down\b"
        r"(?! for (?:maintenance|a reboot|updates?|an upgrade))"
        r"|(?<!loss )(?<!losses )(?<!norm )(?<!gradient )(?<!gradients )(?<!memory )"
        r"\b(?:blows? up|blew up)\b"
        r"|\bversions? mismatch\w*"
        # a non-zero exit ("exits with exit code 1", "non-zero exit status")
        r"|\bexit(?:s|ed)? (?:with )?(?:exit )?(?:code|status)(?: ?[:=])? ?-?[1-9]\d{0,2}\b"
        r"|\bnon-?zero exit (?:status|code)\b"
        r"|\bexit\w* with (?:a )?non-?zero (?:exit )?(?:code|status)\b"
        # an exception raised, or the job that cannot start ("unable to run on 2 GPUs")
        r"|\bexceptions?\b|\b(?:raises?|raised|throws?|threw) (?:an? )?\w*Error\b"
        r"|\b(?:unable to|can ?not|can't|could ?n[o']t|won't|not able to) (?:run|start|launch"
        r"|train|initiali[sz]e|init|connect|communicate|load|use (?:multiple|more than one|all)"
        r" GPUs)\b"
        # a GPU that cannot join ("I could not add the 10th gpu to the strategy")
        r"|\b(?:unable to|can ?not|can't|could ?n[o']t|not able to) add (?:the |a |another |more )?"
        r"(?:\d{1,3}(?:st|nd|rd|th)? |\w+ )?GPUs?\b"
        # the same, said of the job ("the other one cannot be trained", "it still didn't run")
        r"|\b(?:can ?not|can't|could ?n[o']t|won't) be (?:trained|run|started|launched)\b"
        r"|\b(?:did ?n[o']t|does ?n[o']t|never) (?:run|start)s?\b"
        # Chinese: an error is reported, error (not an error rate), failed, crashed, cannot
        # train / run / start / connect...
        # (not "无报错" / "没有报错" / "不报错": no error was reported)
        r"|(?<!无)(?<!没有)(?<!没)(?<!不)报错|错误(?!率)|失败|崩溃|无法(?:训练|运行|启动|使用|正常|进行|完成|连接|通信|初始化)"
        # cannot get it going, exits at once, died, crashed ("起不来", "启动不了", "跑不起来",
        # "直接退出", "挂了", "崩了")
        r"|起不来|(?:启动|运行|训练|跑)不(?:了|起来)|跑不起来|直接退出|自动退出|挂了|崩了"
        # Japanese, Korean, Russian and other languages (signs.languages)
        rf"|{FAILED_OTHER}"
    ),
    "the reporter says it fails, with no message the catalogue knows",
    # a program's hint or a condition ("if auto-resume does not work, ...", "提示: ...")
    rx(
        r"^\s*(?:tips?|hint|note|提示)\s*[:：]"
        r"|\b(?:if|whether|in case)\b[^.;]{0,60}\b(?:does ?n[o']t|do ?n[o']t|not) work"
    ),
    says_failure,
)
