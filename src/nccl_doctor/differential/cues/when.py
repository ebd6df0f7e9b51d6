"""When and how the job stalls: at start-up, in NCCL's init, in the rendezvous, after hours;
a rank's own branch or setting, a barrier, every rank on one GPU, the GPUs' load, the
whole machine frozen, a reboot needed, the ranks in their own code.
"""

from __future__ import annotations

from nccl_doctor.differential.cues.base import (
    COLLECTIVE,
    EMPTY,
    FULL,
    GPU_LOAD,
    NO_CPU,
    NOT_USED,
    ONLY_RANK,
    OUTCOME,
    RANKS,
    TOGGLE,
    UPDATE,
    WORK,
    Cue,
    cue,
    load_reads,
)
from nccl_doctor.differential.prose import NOT_SAID, ONE_GPU_DOES_ALL, UNDENIED, rx
from nccl_doctor.signs.launch import RANK_FAILED_FIRST, RANK_STILL_BUSY

WHEN: dict[str, Cue] = {
    # the job ran before it hung or failed (steps, epochs, hours, a checkpoint): an application
    # or data problem, not set-up
    "ran_before": cue(
        r"\bend of (?:(?:an?|the|each|first|single|every) )*epoch|\bcheckpoint\w*"
        r"|\bafter (?:\d+|some|many|a few|several) "
        r"(?:steps|iter(?:ation)?s?\b|epochs|batches|hours)"
        r"|\bran (?:clean|fine|well) for\b|\bmid[- ]training\b|\bvalidation\b|\beval(?:uat\w*)?\b"
        # saving the model or the trainer's state ("stuck in accelerator.save_state(...)",
        # "hangs when saving the model"): a checkpoint by another name
        r"|\bsave_(?:state|checkpoint|model|pretrained)\b"
        r"|\bsav(?:e|es|ing) (?:the )?(?:model|state|weights)\b"
        # the first steps ran: their collectives completed ("freezes after the first step")
        r"|\bafter (?:the )?(?:first|1st|one|a) (?:training |train )?(?:step|iteration|batch)\b"
        # it ran a while first ("after about 2 hours", "after 3 days of training", "runs for a
        # while and then hangs", "in the middle of an epoch", "randomly during training")
        # (hours or days: "after 30 minutes" is as often the process group's timeout itself)
        r"|\bafter (?:about |around |roughly |~ ?)?\d{1,4} ?(?:hours?|hrs?|days?)\b"
        r"|\bruns? (?:fine |normally |ok )?for (?:a while|some time|hours|days)\b"
        r"|\b(?:in the )?middle of (?:an? |the )?(?:epoch|training|run)\b|\bmid-?epoch\b"
        r"|\brandomly during (?:the )?training\b"
        # a named epoch or step past the first ("after epoch 0, epoch 1 was stuck", "stays stuck
        # on iteration 999", "in the second epoch", "在第二个 epoch 卡在")
        r"|\bafter (?:the )?(?:epoch|step|iteration) \d+|\bepoch \d+ (?:was|is|got|gets) stuck\b"
        # the first epoch ran ("hangs forever after the first train+val epoch")
        r"|\bafter (?:the )?(?:first|1st|one) (?:[\w+/-]{1,20} ){0,2}?epoch\b"
        # (not "freezes in Epoch 1/24": Keras counts epochs from 1)
        r"|\b(?:stuck|hangs?|hung|freez\w*) (?:on|at|in) (?:iteration|step|epoch) (?:[2-9]|[1-9]\d)"
        r"|\b(?:second|third|next|last|later) epoch\b|第[二三四五六七八九十\d]+个? ?(?:epoch|轮)"
    ),
    # NCCL's own communicator set-up hangs ("freezes at NCCL init", "stuck in
    # ncclCommInitRank"): the ranks met at the store already; NCCL's bootstrap connects them
    # over its own sockets next
    "nccl_init_hang": cue(
        r"\b(?:hang|hung|stuck|freez)\w*\b[^.!?;\n]{0,30}\b(?:at|during|on|in|when|while) "
        r"(?:the )?(?:NCCL(?:'s)? (?:comm(?:unicator)? )?init\w*|ncclCommInit\w*"
        r"|(?:the )?communicator init\w*|(?:creating|initiali[sz]ing) (?:the )?(?:NCCL )?"
        r"communicator)"
        r"|\bncclCommInit\w*\b[^.!?;\n]{0,30}\b(?:hangs?|hung|never returns|stuck)\b"
        # the init as the subject ("NCCL init then hangs until the watchdog timeout")
        r"|\bNCCL(?:'s)? (?:comm(?:unicator)? )?init(?:iali[sz]ation)?\b[^.!?;\n]{0,20}?"
        r"\b(?:hangs?|hung|is stuck|gets stuck|freezes|never (?:completes|finishes|returns))\b"
    ),
    # the hang is at start-up: connection set-up, not the application
    "startup_hang": cue(
        r"\b(?:hang|hung|stuck|freez)\w*\b[^.!?;\n]{0,30}\b(?:at|during|on|when|while) "
        r"(?:the )?(?:very )?(?:start ?up|startup|the start|beginning|init\w*"
        r"|communicator init\w*|the first collective|(?:DDP|process group) init\w*"
        r"|(?:creating|initiali[sz]ing|setting up) (?:the )?(?:process group|DDP|distributed))"
        r"|\binit\w*\b[^.!?;,\n]{0,30}\bhangs?\b"
        r"|\b(?:node|rank|worker|process)s?\b[^.!?;\n]{0,20}"
        r"\bnever (?:joins?|joined|connects?|connected)\b"
        # it never reaches the training ("never gets past initialization", "before the first
        # step", "right after loading the model, before training starts")
        r"|\bnever (?:gets?|got|goes|went|makes? it) (?:past|beyond|through) (?:the )?init\w*"
        r"|\b(?:hang|hung|stuck|freez)\w*\b[^.!?;\n]{0,40}\bbefore (?:the )?(?:first "
        r"(?:step|iteration|batch|epoch)|training (?:starts|begins)|any (?:step|output))"
        r"|\b(?:stuck|hangs?|hung|freez\w*) (?:at|in|on) (?:`)?(?:model ?= ?)?DDP\("
        r"|\bthe first (?:all_?reduce|collective|barrier|broadcast|iteration|step|batch)\b"
        r"[^.!?;\n]{0,20}\bnever (?:returns|completes|finishes|ends)",
        # start-up said to pass ("initialization completes, the hang is in epoch 3")
        unless=rx(
            rf"\b(?:init\w*|start ?up)\b[^.!?;,\n]{{0,12}}{UNDENIED}"
            r"\b(?:completes?|completed|finish(?:es|ed)?|succeed(?:s|ed)?|pass(?:es|ed)?"
            r"|works?|is fine)\b"
        ),
    ),
    # not every node joined: the others wait in the rendezvous ("only one of the two nodes
    # started", "waits at rendezvous forever")
    "rendezvous_wait": cue(
        r"\b(?:wait\w*|stuck|hangs?|hung|blocked)\b[^.;\n]{0,15}\b(?:at|in|on|for) (?:the )?"
        r"rendezvous\b"
        r"|\bonly (?:one|\d+) of the (?:two |\d+ )?(?:nodes|machines|hosts)\b[^.;\n]{0,20}"
        r"\b(?:started|joined|came up|is running|connected)\b"
        # the other node never ran the program ("on the second node there is no Python process
        # at all", "no process was started on the other machine")
        r"|\bon (?:the )?(?:second|other|remaining) (?:node|machine|host)s?\b[^.;\n]{0,30}"
        r"\b(?:no (?:python |training )?process|nothing (?:related to|of) (?:my|the|our) job)"
        r"|\bno (?:python |training )?process(?:es)? (?:\w+ ){0,3}on (?:the )?(?:second|other"
        r"|remaining) (?:node|machine|host)s?\b"
        # the other node named: logged into while the job ran, and no process there ("I ssh'd
        # to gn032 while the job was running and there was no python process at all"), or
        # never in the job's output ("I never see gn032 in any log line")
        r"|\bssh(?:'d|ed)? (?:in)?to \S{2,40}\b[^.;\n]{0,80}?\bno (?:python |training |torchrun )?"
        r"process|\bnever see \S{2,40} in (?:any|the) (?:log|output)"
    ),
    # a batch script that runs the program itself, not through srun ("the last line of the
    # batch script is just python train.py", "we run it without srun"): sbatch runs its script
    # on the first node alone, so on a job across nodes only that node's ranks start
    "no_srun": cue(
        r"\b(?:s?batch|slurm|job) script\b[^.;\n]{0,60}\b(?:just|only|plain|simply) "
        r"(?:(?:runs?|calls?|starts?|executes?|has|is) )?[`'\"]?python3?\b"
        # ("the batch script activates the environment and then calls python train.py")
        r"|\b(?:s?batch|slurm|job) script\b[^.;\n]{0,80}\bthen (?:runs?|calls?|starts?|executes?)"
        r" [`'\"]?python3?\b"
        rf"|{NOT_SAID}\bwithout (?:using |calling )?srun\b"
        # Korean, Japanese, Chinese: srun not put in front, without srun
        r"|\bsrun\s?(?:은|는|을|를)?\s?안 (?:붙|쓰|썼|써|사용)|\bsrun\s?없이"
        r"|\bsrun\s?(?:を|は)?(?:使わず|付けず|使っていない|付けていない|なしで)"
        r"|(?:没有|没|不)(?:用|加|使用)\s?srun\b"
    ),
    # the memory those processes take is what the reporter complains of ("extra gpu memory on
    # rank 0", "occupy memory", "limits the batch size", Chinese 显存)
    "memory_said": cue(
        r"\b(?:GPU |extra |more |the )?memory\b(?! (?:bandwidth|clock|controller|errors?|ECC)\b)"
        r"|\bbatch[ _]size\b|\bout of memory\b|\bOOM\b|显存"
    ),
    # the ranks run different code: one rank (or some) takes a path the others do not, so they
    # wait in collectives it never calls ("evaluate only on rank 0", "if rank == 0: save",
    # "early stopping", "a different number of batches per rank"); "only on rank 0" names
    # such a path only beside the work done there ("the timeout is reported only on rank 0",
    # "only one rank crashes" say where the failure shows, not what the ranks run)
    "rank_branch": cue(
        # (an attribute's owner may come first: "if self.global_rank == 0", "if args.local_rank")
        r"\b(?:if|when|while)\s+(?:the\s+)?(?:\w{1,30}\.){0,2}(?:(?:global|local)[_ ])?rank"
        r"\s*(?:==|!=|is|=)\s*0\b"
        # (not a print or a log line: rank 0 alone printing calls no collective)
        r"(?!\s{0,3}:\s{0,3}(?:print|log|logger|logging|wandb|tqdm|pbar|writer)\b)"
        # (a call's own dots are no sentence's end: "call `trainer.log_dir` only in process 0")
        rf"|\b{WORK}\b(?:[^.,;!?\n]|\.(?=\w)){{0,30}}?\b{ONLY_RANK}"
        rf"|\bonly (?:the )?{RANKS}\s(?:\w{{1,12}}\s)?{WORK}\b"
        r"|\bis_(?:local_)?main_process\b|\bget_rank\(\)\s*==\s*0\b"
        # the frameworks' own rank-0 guards: Lightning's @rank_zero_only and is_global_zero,
        # Hugging Face's is_world_process_zero, the scripts' `local_rank in [-1, 0]`
        r"|\brank_zero_only\b|\bis_global_zero\b|\bis_(?:world|local)_process_zero\b"
        r"|\blocal_rank\s+in\s+[\[(]\s*-1\s*,\s*0\s*[\])]"
        rf"|{NOT_USED}\b(?:uneven|unequal|different (?:number|amount)s? of) (?:data|batches"
        rf"|samples|steps|iterations)\b|{NOT_USED}\bearly[ -]?stopp\w*"
        # a rank with nothing to work on returns early: "any one rank has all empty validation",
        # "a rank whose shard had no images"; a collective some ranks skip or call more often
        r"|\b(?:a|one|any|some|each) (?:one )?(?:rank|gpu|process|worker|stage)s?\b[^.;\n]{0,30}"
        r"\b(?:has|had|have|gets?|got|holds?|with|whose)\b[^.;\n]{0,20}\b(?:empty|no (?:data"
        r"|samples|labels|targets|images|boxes|tokens|metrics?|batch\w*))\b"
        # "ranks that have no data", "some nodes have no samples", "a worker received no shards"
        r"|\b(?:ranks?|gpus?|process(?:es)?|workers?|nodes?|stages?)\b (?:that |which )?"
        r"(?:have|has|had|gets?|got|receiv\w*) no (?:data|samples|shards|batch\w*)\b"
        # a rank whose data ends first ("one rank runs out of data before the others")
        r"|\b(?:one|a|some) (?:rank|gpu|process|worker)s? (?:runs?|ran) out of (?:data|batches"
        r"|samples)\b|\bfewer (?:batches|samples|steps|iterations) than the others\b"
        # the data split unevenly across the ranks (Chinese: the data is unbalanced)
        r"|数据(?:不平衡|不均衡|不均匀)"
        r"|\b(?:skip\w*|return\w* early)\b[^.;\n]{0,30}"
        r"\b(?:collectives?|all_?reduce|all_?gather\w*|reduce_scatter|broadcast\w*|barrier)\b"
        r"|\b(?:one|1|a) (?:collective|op|operation|call)s? (?:op )?behind\b"
        r"|\bdifferent (?:number|count)s? of (?:collective|all_?reduce|all_?gather|barrier)"
        # the ranks said to have issued different collectives ("2 trainers sent out
        # mismatched collectives, one doing all-to-all, the other doing all-reduce")
        rf"|{NOT_USED}\bmis-?match\w* collective"
        r"|\bcollectives? (?:calls? |ops? )?(?:were |are |was |is )?mis-?match\w*"
        r"|\b(?:ranks?|trainers?|workers?|processes) (?:\w+ ){0,3}(?:called|call|calling|issued"
        r"|issuing|ran|running|in) different collectives\b"
        r"|\bone (?:rank |trainer |process |worker )?(?:is |was )?"
        rf"(?:doing|calling|in|issuing|running) (?:an? )?{COLLECTIVE}[^.;\n]{{0,40}}"
        r"\bthe other\w* (?:\w+ )?(?:doing|calling|in|issuing|running)\b"
    ),
    # the same job at the same point sometimes gets through ("sometimes the save works",
    # "at step 5000 it worked, at step 10000 it died", "not every time", "flaky"): what
    # varies from run to run (a slow file system, a straggler), not a code path that always
    # differs between the ranks
    # the rank the others wait for is said to be still at its own work when they time out
    # ("rank 0 ... is still printing evaluation progress when the job gets killed", "rank 0's
    # log shows it was in the middle of writing the checkpoint"): it would have come, late
    "origin_busy": cue(RANK_STILL_BUSY.pattern),
    "intermittent": cue(
        r"\bsometimes (?:the \w+ |it )?(?:works|worked|succeeds|succeeded|passes|goes through"
        r"|is fine)\b|\bintermittent(?:ly)?\b|\bflaky\b|\bnot (?:always|every time)\b"
        r"|\bat step \d[\d,]* it (?:worked|was fine|passed)\b"
        r"|\b(?:works|worked) (?:again )?(?:on|after) (?:a |the )?(?:rerun|retry|restart)\b"
    ),
    # one rank failed on its own first and the others then waited for it (signs.launch)
    "rank_failed_first": cue(RANK_FAILED_FIRST.pattern),
    # the hang comes and goes with a setting of the program's own (a lower-case name = value:
    # "when I set `filter_empty_gt=False` it keeps waiting", "stuck if set packing=false"): the
    # program's path, or its data, decides whether the ranks meet; not NCCL's, the launcher's
    # or the GPUs' settings (upper-case variables, parallel sizes, devices, ports, workers)
    "own_setting_decides": cue(
        rf"{TOGGLE}[^\n]{{0,120}}?{OUTCOME}|{OUTCOME}[^\n]{{0,120}}?{TOGGLE}"
    ),
    # the hang is at a barrier the code calls (dist.barrier(), Accelerate's main_process_first
    # or wait_for_everyone): every rank must reach it, and one that took another path never
    # does (not the store's own barrier of start-up, "store based barrier")
    "barrier_said": cue(
        r"\b(?:dist|distributed|torch\.distributed)\.barrier\b|(?<![\w.])barrier\(\)"
        r"|\b(?:local_)?main_process_first\b|\bwait_for_everyone\b"
        r"|\b(?:at|in|on|calling|call to|reach\w*) (?:the |a )?(?<!based )barrier\b"
    ),
    # every rank computes on one GPU ("only GPU 0 has load", "all 8 processes run on GPU 0"):
    # the ranks were not given their own device (set_device missing or too late)
    "one_gpu_does_all": cue(ONE_GPU_DOES_ALL),
    # the stuck job's GPUs read full: its ranks wait inside launched NCCL kernels, which poll
    # for their peers' data (measured: an all_reduce whose peer never joins reads 100% for as
    # long as it waits, tests/fixtures/captured/spin-h100) ("GPU utilization stays at 100%",
    # "GPUs at 100% but nothing moves"); not the CPU's load
    "gpus_full": cue(
        load_reads(FULL)
        + r"|\b(?:gpus?|cards?)\b[^.;\n]{0,30}\bfully (?:occupied|utili[sz]ed|loaded|busy)\b"
        # the GPUs themselves at full load ("all GPUs at 100%", "the two GPUs keep busy at 100%")
        + rf"|\b(?:gpus|cards|both gpus|every gpu|each gpu)\b{NO_CPU}{{0,20}}?\b(?:at|to) {FULL}"
        r"(?! ?(?:of (?:the |their |its )?)?(?:memory|mem|vram)\b)",
        unless=rx(load_reads(EMPTY)),
    ),
    # the stuck job's GPUs read empty: no kernel runs, its ranks wait on the host (the store,
    # the bootstrap, connection set-up, the job's own code) (measured: a rank blocked in the
    # c10d store reads 0%, tests/fixtures/captured/spin-h100) ("GPU usage drops to 0%",
    # "the GPUs sit idle")
    "gpus_idle": cue(
        load_reads(EMPTY)
        + rf"|{GPU_LOAD} (?:drops?|dropped|goes|went|fell|falls) (?:down )?to (?:zero|0)\b"
        r"|\b(?:gpus?|cards?) (?:are|were|is|was|go|went|sits?|sat|stays?|stayed) "
        r"(?:all |completely )?idle\b",
        unless=rx(load_reads(FULL)),
    ),
    # the whole machine freezes, not just the job: hardware or driver
    # ("the machine freezes", "system completely hangs"; not "a machine with 4 GPUs hangs",
    # where the job hangs on the machine)
    "system_freeze": cue(
        r"\b(?:system|machine|computer|desktop|os)\s+"
        r"(?:(?!(?:training|job|process|program|script|run|model|server)\b)\w+\s+)?"
        r"(?:freez\w*|froze|frozen|hangs?|hung|locks? up|becomes? unresponsive)\b",
        # "running with 2 processes on an 8-GPU machine hangs", "4 GPUs of one machine hangs":
        # the run hangs on the machine
        unless=rx(
            r"\b(?:on|in|of) (?:an? |the |my |our |one |this |that )?(?:[\w-]+ )?"
            r"(?:system|machine|computer|desktop)\s+(?:freez\w*|froze|frozen|hangs?|hung)\b"
        ),
    ),
    # only a reboot or a power cycle brings the machine back ("must be rebooted by removing
    # the power"): the driver lost a GPU, not a job that waits
    "power_cycle": cue(
        r"\bhard[- ]reboot|\bpower[- ]?cycl\w*|\b(?:removing|cutting|pulling) the power\b"
        r"|\b(?:must|had to|have to|has to|needs? to|needed to) (?:be )?reboot\w*"
        r"|\bneeds? a (?:hard )?reboot\b",
        unless=UPDATE,
    ),
    # the ranks wait in the job's own code, not in a collective ("stuck inside our own logging
    # call", "py-spy shows every rank waiting on the DataLoader queue", "NCCL shows nothing
    # pending")
    "stuck_in_own_code": cue(
        r"\b(?:stuck|hangs?|hung|waits?|waiting|blocked|sits?)\b[^.;\n]{0,30}\b(?:in|inside|on|at) "
        r"(?:our|my|the job's|the user's|their) own\b"
        r"|\bpy-?spy\b[^.;\n]{0,80}\b(?:DataLoader|data ?loader|queue|lock|mutex|GIL|our|my)\b"
        rf"|{NOT_SAID}\bnothing (?:is )?(?:pending|in flight|enqueued)\b",
        unless=rx(r"\b(?:not|never)\b|n't\b"),
    ),
}
