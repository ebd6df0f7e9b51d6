"""Prose rows that name what the job did: its processes on one GPU, DDP's usage errors, wrong
values, a named exception, slowness, the machine powering off, a hang (in the table's
order)."""

from __future__ import annotations

from nccl_doctor.differential.prose.failure import FAILURE
from nccl_doctor.differential.prose.words import (
    GPU_THROTTLED,
    NVLINK_UNUSED,
    ONE_GPU_DOES_ALL,
    UPDATE_WORDS,
    ProseSymptom,
    not_negated,
    rx,
)
from nccl_doctor.knowledge.python_exceptions import APP_EXCEPTIONS, IMPORT_EXCEPTIONS

BEHAVIOUR: tuple[ProseSymptom, ...] = (
    ProseSymptom(
        "gpu_imbalance",
        rx(
            r"\b(?:extra|additional|more|other)\s+(?:\d+\s+)?process\w*\b.{0,40}\bGPU ?#?0\b"
            # "several processes on the gpu 0", "multiple processes on the rank 0 devices",
            # "8 extra processes who occupy memory of the same one gpu"
            r"|\b(?:multiple|several|many|extra|additional|\d+)\s+(?:extra\s+)?process(?:es)?\s+"
            r"on (?:the )?(?:GPU ?#?0|rank ?0(?:'s)? (?:GPU|device|card)s?|master (?:GPU|device))\b"
            r"|\b(?:extra|additional)\s+(?:\d+\s+)?process\w*\b.{0,40}\b(?:memory|space)\b.{0,20}"
            r"\b(?:the )?same (?:one )?(?:GPU|card|device)\b"
            r"|\bprocess\w*\b.{0,100}\b(?:memory|space)\b.{0,20}\bon GPU[ /#]?0\b"
            r"|\b(?:unbalanced|imbalanced|uneven)\b.{0,20}\b(?:GPU )?(?:memory|load|usage)"
            r"|\bprocess\w* on (?:the )?(?:unused|other|all) GPUs\b"
            r"|\b(?:executed|running|runs|lands?|ends? up) on (?:the )?GPU (?:with index )?0\b"
            # "the two processes are running on the same GPU" (not "are not on the same GPU",
            # nor the question "are both ranks on the same GPU?")
            r"|\b(?:two|both|all|multiple|several|\d+) (?:of the )?(?:processes|ranks|workers)\b"
            r"(?:(?!\bnot\b|n't\b|\bnever\b).){0,30}\b(?:on|use|using|share|sharing) (?:the )?"
            r"same (?:GPU|device|card)\b(?! ?\?)"
            # "GPU 0 gets more memory than the others"
            r"|\b(?:GPU ?#?0|0 GPU|first GPU)\b.{0,30}\b(?:more|most|higher|larger|extra)\b"
            r".{0,20}\bmemor\w*"
            # Chinese: all (processes) run on the same card / GPU
            r"|(?:都|全部|全都)(?:跑|在|分配)(?:到|在)?同一(?:张|块|个)(?:卡|显卡|GPU)"
            rf"|{ONE_GPU_DOES_ALL}"
        ),
        "the reporter sees the job's processes or memory on GPU 0 (or GPUs it did not ask for)",
    ),
    ProseSymptom(
        "ddp_usage",
        rx(
            r"\bunused param\w*|\bfind_unused_parameters\b"
            r"|\bparam\w* (?:that )?(?:were|was|are|is|aren't|weren't|not|n't|did not|didn't) "
            r"(?:not )?(?:used|contribut\w*|participat\w*) (?:in|to) (?:produc\w* )?(?:the )?loss"
            r"|\b(?:did not|didn't|do not|don't|does not|doesn't) (?:receive|get) (?:a |any )?grad"
        ),
        "the reporter names DDP's error for parameters that got no gradient",
        # the setting named beside a failure, not in a list of what the script sets
        counts=lambda text, _match: FAILURE.said_in(text),
    ),
    ProseSymptom(
        "wrong_results",
        rx(
            r"\b(?:wrong|incorrect|corrupt\w*|garbage|inconsistent) (?:results?|values?|outputs?"
            r"|data|gradients?|sums?)\b|\bdata corruption\b|\bsilent(?:ly)? corrupt\w*"
            r"|\bresults? (?:are|is|were|was) (?:wrong|incorrect|corrupted|garbage)\b"
            r"|#wrong\b.{0,30}\b[1-9]|\bOut of bounds values\s*:\s*[1-9]"
        ),
        "the reporter says a collective returned wrong values",
        counts=not_negated,
    ),
    # Python's own exception named: the job's code raised it about its data or logic, or an
    # import failed (a traceback pasted without its last line, the name in the title)
    ProseSymptom(
        "app_error",
        rx(rf"\b(?:{'|'.join(sorted(APP_EXCEPTIONS))})\b"),
        "the reporter names an exception the job's own code raises (a builtin about its data "
        "or logic)",
        counts=not_negated,
    ),
    ProseSymptom(
        "library_missing",
        rx(rf"\b(?:{'|'.join(sorted(IMPORT_EXCEPTIONS))})\b"),
        "the reporter names an import that failed",
        counts=not_negated,
    ),
    ProseSymptom(
        "slow",
        rx(
            r"\b(?:slow|low|poor|degraded|reduced)\b.{0,40}"
            r"\b(?:bandwidth|busbw|bus bw|performance|throughput)"
            r"|\b(?:bandwidth|busbw|performance|throughput)\b.{0,40}"
            r"\b(?:is|was|only|drops?)\b.{0,20}\b(?:low|slow|only|\d{1,3} ?%)"
            r"|\bperformance degradation\b"
            r"|\b(?:performance|bandwidth|busbw|throughput|speed)\b.{0,20}"
            r"\b(?:degrad(?:es|ed|ing)|drops?|dropped|decreas(?:es|ed))\b"
            r"|\b(?:slower|longer) than (?:on |with )?(?:one|1|a single|single)\b"
            # a time that grows ("the iteration time doubles with 16 GPUs", "all_reduce takes
            # 10x longer on the new cluster"); Chinese "速度很慢", "变慢"
            r"|\b(?:iteration|step|epoch|training|communication|all_?reduce|collective)s? "
            r"(?:time|latency)s? (?:doubles|doubled|triples|tripled|grows|grew|increases"
            r"|increased|jumps|jumped)\b"
            r"|\btakes? (?:\d{1,4}(?:\.\d{1,3})? ?(?:x|\u00d7|times) |much |far |way )longer\b"
            r"(?! to (?:download|load|install|compile|build|start|read|write)\b)"
            r"|速度(?:很|非常|特别|太|极)?慢|变慢|慢了很多"
            # how much slower, or than what ("0.3% slower than others", "3x slower", "slower
            # than the other nodes", "a 20% slowdown"); not nvidia-smi's "HW Slowdown" field
            r"|\b\d{1,4}(?:\.\d{1,3})? ?(?:%|x|\u00d7|times) slower\b"
            r"|\bslower than (?:the )?(?:others?|rest|expected|before|usual"
            r"|other (?:nodes?|runs?|jobs?|GPUs?|ranks?|machines?))\b"
            r"|\b(?:a|the|this|that|big|huge|significant|noticeable"
            r"|\d{1,4}(?:\.\d{1,3})? ?(?:%|x|\u00d7))[ -]slowdowns?\b"
            # "a very long time for computing each epoch"
            r"|\b(?:very|extremely|really|too|so|much) long (?:time|times)\b"
            r"|\bslower and slower\b|\b(?:is|runs?|gets?|getting|became|becomes?) (?:very |much |"
            r"extremely |really |so )?slow(?:er)?\b"
            # the GPUs talk over PCIe where NVLink should carry it
            rf"|{NVLINK_UNUSED}"
            # the GPUs' clocks held down ("clocks drop to 800 MHz", "HW Slowdown Active")
            rf"|{GPU_THROTTLED}"
        ),
        "the reporter says the job or a benchmark is slow (a bandwidth problem, no error), or "
        "that its GPUs' NVLink is down or unused",
        counts=not_negated,
    ),
    # the whole machine turns itself off or restarts while the GPUs work ("usage is shutting
    # down system", "the PC reboots as soon as training starts"): not a job that stops, the
    # host that loses power or panics; not a reboot someone did ("after a reboot")
    ProseSymptom(
        "power_loss",
        rx(
            # the machine as the subject: powering off and rebooting are the hardware's own;
            # restarting or resetting only said of the machine ("the server restarts" is as
            # often an inference server's process)
            r"\b(?:system|machine|computer|pc|server|workstation|host|node|box)\s+"
            r"(?:\w+\s+)?(?:shuts? (?:itself )?(?:down|off)|shutting (?:itself )?(?:down|off)"
            r"|powers? (?:itself )?(?:off|down)|powered (?:itself )?(?:off|down)"
            r"|turns? (?:itself )?off|turned (?:itself )?off|reboots|rebooted)\b"
            r"|\b(?:system|machine|computer|pc|workstation|box)\s+(?:\w+\s+)?"
            r"(?:restarts|restarted|resets)\b"
            # the machine as the object ("is shutting down system", "powers the machine off");
            # not "a powerful machine", nor "turned the server on"
            r"|\b(?:shut(?:s|ting)?|power(?:s|ed|ing)?|turn(?:s|ed|ing)?) (?:down |off )"
            r"(?:the |my |our )?(?:whole |entire )?"
            r"(?:system|machine|computer|pc|server|workstation)\b"
            r"|\b(?:shut(?:s|ting)?|power(?:s|ed|ing)?|turn(?:s|ed|ing)?) (?:the |my |our )?"
            r"(?:whole |entire )?(?:system|machine|computer|pc|server|workstation) (?:down|off)\b"
            r"|自动关机|突然(?:关机|重启|断电)|直接(?:关机|重启|断电)"
        ),
        "the reporter says the whole machine powered off or restarted by itself under the job",
        # a reboot someone did, or one the driver's install asks for; "the system shuts down
        # the process" (it ended the job, not the machine)
        unless=rx(
            r"\b(?:after|before|until|needs?|need to|had to|have to|must|requir\w*|tried|try)\b"
            r"[^.;\n]{0,20}\b(?:a |the )?(?:reboot|restart|power[- ]cycle)"
            rf"|{UPDATE_WORDS}|\bdown the (?:process|job|training)\b"
            # someone did it ("I shut down the server", "we rebooted the node")
            r"|\b(?:I|we|you|they) (?:then |also |just )?(?:shut|power|turn|reboot|restart)\w*\b"
        ),
    ),
    ProseSymptom(
        "hang",
        rx(
            r"\b(?:hangs?|hanging|hung|freez\w*|frozen|stuck\w*|no progress|deadlock\w*"
            r"|stall(?:s|ed)?|never (?:ends|returns|finishes)|unresponsive"
            r"|(?:stopped|stops|stop|not) responding|takes? forever)\b"
            # it waits and nothing comes ("keeps waiting", "is always waiting", "waits forever")
            r"|\b(?:wait(?:s|ed|ing)?|blocked)\b(?: [^.!?;\n,]{0,40})? (?:forever|indefinitely"
            r"|endlessly)\b"
            r"|\b(?:keeps?|kept|(?:is|are|was|were) (?:always|still)) waiting\b"
            # nothing answers ("it stops and has no response"); set-up that never ends ("the
            # nodes don't finish connecting")
            r"|\b(?:has|had|with|gives?|gave) no response\b"
            r"|\b(?:do ?n[o']t|does ?n[o']t|did ?n[o']t|never|not) (?:finish|complete)s? "
            r"(?:connecting|initiali[sz]\w*|the (?:rendezvous|handshake))\b"
            # NCCL's kernels spin while they wait: the GPUs busy, the job not moving
            r"|\b(?:utili[sz]ation|util|usage)\b.{0,30}\b100 ?%.{0,60}"
            r"\b(?:nothing (?:happens|moves)|no (?:progress|output|logs?)"
            r"|not (?:moving|progressing))"
            # nothing comes out and nothing fails ("I run the command, but no output, no
            # error"); not a process said to end that way ("exits with no output and no error")
            r"|(?<!with )(?<!without )\bno (?:output|logs?)[ ,]{1,3}(?:and |or |nor )?no "
            r"(?:errors?|error messages?|exceptions?)\b"
            r"|(?<!with )(?<!without )\bno (?:errors?|error messages?|exceptions?)[ ,]{1,3}"
            r"(?:and |or |nor )?no (?:output|logs?)\b"
            # nothing more comes ("I launch it and nothing happens", "nothing else is printed",
            # "no further output after init_process_group", "... and then nothing."); not
            # "nothing happens to the loss", nor "and then nothing changed"
            # (not a condition: "if nothing happens, check ...", "nothing else is printed when
            # it succeeds"; nor "nothing happens to the loss", "no further output is needed")
            r"|(?<!if )(?<!when )(?<!unless )\bnothing (?:happens|happened)\b"
            r"(?! (?:to|with|if|when)\b)"
            r"|\bnothing (?:else |more |further )?(?:is |gets |was |got )?"
            r"(?:printed|shown|logged|output|comes)\b(?! (?:when|if|unless|because)\b)"
            r"|\b(?:prints?|printed|outputs?|shows?) nothing (?:else|more|further)\b"
            r"|\bno (?:further|more|additional|new) (?:output|logs?|log lines|messages|progress)\b"
            r"(?! (?:is |was )?(?:needed|required|necessary|expected)\b)"
            r"|\band then nothing(?=[.!,;]|$| (?:else |more )?(?:happens|happened|is printed"
            r"|comes))"
            # the job does not go on ("doesn't proceed past the first batch", "it does not
            # move on after the dataloader is built"); not a decision ("we will not proceed
            # with the upgrade", "not move on to multi-node"), nor "the loss does not continue
            # to drop"
            r"|\b(?:does ?n[o']t|did ?n[o']t|do ?n[o']t|won't|will not|never|not) "
            r"(?:(?:proceed|move on|go on|advance)(?=[.!,;]|$| (?:past|beyond|after|from)\b)"
            r"|make (?:any )?progress|get past|go past|go (?:any )?further"
            r"|continue (?:training|running|past|beyond|after))\b"
            # a counter that stays put ("stays at 0%", "remains at step 10")
            r"|\b(?:stays?|stayed|remains?|remained) (?:at|on) (?:0 ?%"
            r"|(?:step|iteration|epoch|batch) \d)"
            # training that never begins ("the job never starts training with 4 GPUs")
            r"|\bnever (?:starts?|begins?|began) (?:the )?(?:training|to train|iterat\w*"
            r"|the first (?:step|epoch|iteration|batch))\b"
            r"|\b(?:waits|waiting) there\b"
            # the other node (or ranks) never arrive
            r"|\b(?:node|rank|worker|process)s?\b.{0,20}\bnever (?:joins?|joined|connects?"
            r"|connected|arrives?)\b"
            # the run itself stops ("which causes the training to stop", "on 3 GPUs training
            # stops randomly"), as Japanese "止まって" below; not "I stopped the training"
            r"|\b(?:training|job|run|program) (?:to )?(?:stops?|stopped)\b"
            # it stops with nothing said ("when I try to train it just stops", "it just sits
            # there"); not "it just stops working", a failure
            r"|\bjust (?:stops|stopped|sits|sat)\b(?! working)|\b(?:sits|sat|sitting) there\b"
            # Chinese: stuck, stuck at ("卡在初始化"; not a count of cards: "两张卡在同一台机器"),
            # hung, no response
            r"|卡住|卡死|挂起|无响应|(?<![\d张块个号多单双两三四五六七八九十几显这那该每])卡[在着]"
            # no output or reaction at all, does not move, does not go on
            r"|(?:没有|无)(?:任何)?(?:输出|反应)|一直不动|不动了|没反应|不往下(?:走|跑|执行|进行)"
            # Japanese: hangs, freezes, (the processing) stops ("止まってしまいます")
            r"|ハング|フリーズ|固ま(?:る|って|った|り)|止ま(?:って|った|ったまま|る)"
        ),
        "the reporter says the job hangs",
        counts=not_negated,
    ),
)
