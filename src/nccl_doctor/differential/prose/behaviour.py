"""Prose rows that name what the job did: its processes on one GPU, DDP's usage errors, wrong
values, a named exception, slowness, the machine powering off, a hang (in the table's
order)."""

from __future__ import annotations

import re

from nccl_doctor.differential.prose.failure import FAILURE
from nccl_doctor.differential.prose.words import (
    GPU_THROTTLED,
    NVLINK_UNUSED,
    ONE_GPU_DOES_ALL,
    PARAMS_DIFFER,
    UPDATE_WORDS,
    ProseSymptom,
    rx,
)
from nccl_doctor.facts.told import not_negated
from nccl_doctor.knowledge.python_exceptions import APP_EXCEPTIONS, IMPORT_EXCEPTIONS
from nccl_doctor.signs.languages import HANG_OTHER, SLOW_OTHER

#: What a model's training reports, said just before "stuck" or "卡在": a number that does not
#: move ("the loss is stuck at 2.3", "loss 一直卡在 2.3"), not the job.
_METRIC_BEFORE = rx(
    r"\b(?:loss(?:es)?|accuracy|acc|metrics?|perplexity|ppl|rewards?|scores?|lr"
    r"|learning rate|grad(?:ient)? norm|val(?:idation)? \w+)\b[^.,;!?\n]{0,20}$"
    r"|(?:损失|准确率|精度|loss|acc)[^，。；\n]{0,8}$"
)


def _hang_said(text: str, match: re.Match[str]) -> bool:
    """Whether a hang word says the job hangs: not denied, not a metric that does not move."""
    before = text[max(0, match.start() - 40) : match.start()]
    return not_negated(text, match) and not _METRIC_BEFORE.search(before)


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
            # every rank also on GPU 0 ("all 8 DDP processes create a context on GPU 0", "every
            # rank also allocates a bit on cuda:0", "4 python processes on GPU 0", "the job is
            # touching GPU 0 as well", "memory usage on GPU 0 is way higher than on the others")
            # (every rank, not one: "rank 0: allocated 1024 floats on cuda:0" is its own GPU)
            r"|\b(?:every|each|all|other|the other|all \d{1,3}|\d{1,3}) (?:\w+ )?"
            r"(?:process(?:es)?|ranks?|workers?)\b[^.;\n]{0,30}\b(?:create|creates|created"
            r"|allocate|allocates|allocated|put|puts|land|lands|initiali[sz]e\w*|open|opens)\b"
            r"[^.;\n]{0,30}\b(?:on|to) (?:the )?(?:GPU ?#?0|cuda:0|first GPU|device 0)\b"
            r"|\b(?:\d+|several|multiple|all|many) (?:python )?process(?:es)? on (?:the )?"
            r"(?:GPU ?#?0|cuda:0|first GPU)\b"
            r"|\b(?:touch\w*|us(?:es|ing)|occup\w*) (?:the )?(?:GPU ?#?0|cuda:0) (?:as well|too)\b"
            r"|\b(?:memory|usage)\b[^.;\n]{0,20}\bon (?:the )?(?:GPU ?#?0|cuda:0|first GPU)\b"
            r"[^.;\n]{0,20}\b(?:higher|more|larger|bigger)\b"
            # Chinese: all (processes) run on the same card / GPU
            r"|(?:都|全部|全都)(?:跑|在|分配)(?:到|在)?同一(?:张|块|个)(?:卡|显卡|GPU)"
            # Chinese and Japanese: all on the first card, GPU 0 takes more memory, processes
            # hang off GPU 0 only
            r"|(?:都|全部|全都)(?:跑|在)(?:在|到)?(?:第一张卡|0\s?号卡|GPU\s?0)"
            r"|(?:0\s?号卡|GPU\s?0)[^。；\n]{0,10}比其他卡多|在\s?GPU\s?0\s?上(?:占了|起了)"
            # "GPU 0 shows every process's number" (each rank's PID listed under card 0)
            r"|(?:0\s?号(?:显)?卡|第一张(?:显)?卡|GPU\s?0)\s?上[^。；\n]{0,6}(?:每个|所有|全部)(?:的)?进程"
            r"|GPU\s?0に(?:だけ)?[^。\n]{0,20}プロセス|メモリ使用量が偏って"
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
        "ddp_usage",
        rx(PARAMS_DIFFER),
        "the reporter names DDP's check that every rank holds the same model",
        counts=not_negated,
    ),
    ProseSymptom(
        "wrong_results",
        rx(
            r"\b(?:wrong|incorrect|corrupt\w*|garbage|inconsistent) (?:results?|values?|outputs?"
            r"|data|gradients?|sums?)\b|\bdata corruption\b|\bsilent(?:ly)? corrupt\w*"
            r"|\bresults? (?:are|is|were|was) (?:wrong|incorrect|corrupted|garbage)\b"
            r"|#wrong\b.{0,30}\b[1-9]|\bOut of bounds values\s*:\s*[1-9]"
            # "a non-zero #wrong count", "the tensors are all zeros instead of rank 0's data",
            # "gradients don't match between ranks", "the results are off", "values come back
            # doubled"; Chinese and Korean the same
            r"|\bnon-?zero #wrong\b|#wrong (?:count|column)\b[^.;\n]{0,20}\b(?:non-?zero"
            r"|not (?:0|zero))\b|\ball zeros? instead of\b"
            r"|\b(?:do ?n[o']t|does ?n[o']t|did ?n[o']t|not) (?:match|agree)\b[^.;\n]{0,20}"
            r"\b(?:between|across) (?:the )?(?:ranks|GPUs|processes|workers|replicas)\b"
            r"|\b(?:results?|values?|outputs?) (?:are|is|were|was|come back|came back) "
            r"(?:off|doubled|different)\b"
            r"|#wrong[^。；\n]{0,10}不是\s?0|(?:梯度|结果|数值)[^。；\n]{0,4}不一致"
            r"|(?:数值|结果)[^。；\n]{0,6}(?:是错的|不对)|결과가[^.\n]{0,10}다르게|값이 이상"
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
            # scaling that buys nothing ("barely faster than a single node", "scaling is
            # terrible", "5x worse", "way slower", "crawls", "takes ages", "40% more time per
            # iteration")
            r"|\bbarely faster\b|\bscal(?:ing|es) (?:is |was )?(?:terrible|bad|poor|awful"
            r"|horrible|badly)\b|\b\d{1,4}(?:\.\d{1,3})? ?(?:x|\u00d7|times) worse\b"
            r"|\b(?:way|much|far|a lot|significantly|noticeably|dramatically) slower\b"
            r"|\bslower than (?:\w+ ){0,2}(?:single|one|1)[- ]?(?:gpu|card|node|machine|process)"
            r"|\bcrawl(?:s|ing)?\b|\btakes? ages\b|\b\d{1,3} ?% more time (?:per|for|each)\b"
            # "gives half the inter-node busbw of the others", "at about half the speed"
            r"|\bhalf (?:the|its|their) (?:speed|bandwidth|busbw|throughput|performance)\b"
            # a share of what it did ("runs at about 55% of the old throughput"), or a figure
            # against the one it should be ("~45 GB/s busbw instead of the ~480 GB/s")
            r"|\b(?:at|to|only) (?:about |roughly |around |~ ?)?\d{1,2}(?:\.\d)? ?% of (?:the |its "
            r"|our |their )?(?:\w+ )?(?:throughput|speed|bandwidth|busbw|performance)\b"
            r"|\b\d+(?:\.\d+)? ?GB/s\b[^.;\n]{0,20}?\binstead of (?:the )?(?:~ ?|about )?\d"
            # Chinese: slow beyond reason, throughput or speed dropped,
            # slower than before, got slow
            r"|慢得离谱|(?:速度|吞吐|性能)(?:量)?(?:明显|大幅|严重)?(?:下降|降低|变差)"
            r"|比(?:之前|以前|单机|单卡)慢"
            # slower than another machine or by how much ("比另一台同配置的慢 30%", "慢了 40%")
            r"|比[^，。,.!?？！\n]{1,20}?慢|慢了?\s?\d{1,3}\s?%"
            # more GPUs or nodes that buy nothing ("no speedup at all", "it doesn't scale",
            # "the same throughput as our old 25GbE nodes")
            r"|\bno (?:real |noticeable |significant |measurable )?speed-?ups?\b"
            # (not what a program scales: "doesn't scale the learning rate")
            r"|\b(?:does(?:n'?t| not)|did(?:n'?t| not)|won'?t) scale\b"
            r"(?! (?:the|its|their|my|our|a|an|up|down|to|it|them)\b)|\bnot scaling\b"
            r"|\bthe same (?:throughput|speed|samples/s\w*|it/s|tokens/s\w*|step time) as "
            r"(?:on )?(?:our |the )?(?:old|previous|single)\b"
            # Japanese, Korean, Russian and other languages (signs.languages)
            rf"|{SLOW_OTHER}"
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
            r"(?:[\w-]+\s+){0,4}?(?:shuts? (?:itself )?(?:down|off)"
            r"|shutting (?:itself )?(?:down|off)"
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
            # it restarted by itself, or lost power ("node restarted by itself", "node 3 lost
            # power"); Chinese, Japanese and Korean the same
            r"|\b(?:restart|reboot|reset)(?:s|ed)? (?:by |on )?itself\b"
            r"|\b(?:lost|loses|losing) power\b"
            r"|自己(?:关机|重启|断电)|マシンごと再起動|전원이 (?:갑자기 )?꺼"
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
            r"|\b(?:waits|waiting) there\b|\bstop(?:s|ped)? (?:progressing|making progress)\b"
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
            # Japanese, Korean, Russian and other languages (signs.languages)
            rf"|{HANG_OTHER}"
        ),
        "the reporter says the job hangs",
        counts=_hang_said,
    ),
)
