"""Signs read by the launch rules (``rules/launch``) and by who-started-the-ranks."""

from __future__ import annotations

from nccl_doctor.facts.signs import sign

# -- which launcher started the ranks ------------------------------------------------------
ELASTIC_LOGGER = sign(
    "launch.elastic_logger",
    r"torch/distributed/(?:run|elastic/)\S{0,200}?\.py:\d{1,6}\]",
    "a log line of torchrun's elastic agent (its logger names torch/distributed/run.py ...)",
)
SLURM_LINE = sign(
    "launch.slurm_line",
    r"(?:^|\s)srun: |slurmstepd",
    "a line Slurm's srun or slurmstepd printed: srun started the ranks",
)
TORCHRUN_NAMED = sign(
    "launch.torchrun_named",
    r"\btorchrun\b|torch\.distributed\.(?:launch|run)\b",
    "torchrun (or torch.distributed.launch/run) is named: a command line or its usage",
)
DEEPSPEED_COMMAND = sign(
    "launch.deepspeed_command",
    r"\bdeepspeed\b.{0,40}--(?:num_gpus|hostfile|include)",
    "a deepspeed launcher command line (with its --num_gpus/--hostfile/--include)",
)

# -- duplicate and nested launches -----------------------------------------------------------
LOCAL_AS_RANK = sign(
    "launch.local_as_rank",
    # (or the node's GPU index as the rank: "rank=local_gpu_index" in an mp.spawn worker)
    r"\brank\s{0,20}=\s{0,20}(?:args\.|opt\.|opts\.|self\.|cfg\.|config\.)?"
    r"local_(?:rank|gpu(?:_index|_id|_idx)?|device(?:_index|_id)?|index|idx)\b(?!\s{0,5}=)"
    # the variable read straight from the environment, or the call told in words ("call
    # init_process_group with rank equal to that local rank")
    r"|\brank\s{0,20}=\s{0,20}int\(\s{0,5}os\.environ\[\s{0,5}[\"']LOCAL_RANK[\"']\s{0,5}\]\s{0,5}\)"
    r"|\brank (?:equal to|set to|as) (?:the |that |my |its |our )?local[ _]rank\b",
    "code passing the local rank as the global rank (rank=args.local_rank; not a key=value list"
    " with an empty rank, as nccl-doctor's own stack captures head theirs: rank= local_rank=)",
)
JOB_STOPPED = sign(
    "launch.job_stopped",
    # slurmstepd's words when the job is ended from outside: scancel or an administrator
    # (SIGTERM/SIGKILL), a job of higher priority, a requeue (src/slurmd/slurmstepd/req.c)
    r"\*\*\* (?:JOB|STEP) \S{1,40} ON \S{1,200} CANCELLED AT \S{1,40}"
    r"(?: DUE TO (?:PREEMPTION|JOB REQUEUE))? \*\*\*",
    "Slurm ended the job from outside (scancel, preemption, requeue): no failure of its own",
    case=True,
)
LOOPBACK_DIAL_RETOLD = sign(
    "launch.loopback_dial_retold",
    # a store client's refused connect to its own machine, in a person's words ("the client
    # socket fails to connect to localhost:29500, Connection refused"; Chinese "connecting to
    # localhost:29500 failed")
    r"(?:connect\w{0,3}|dial\w{0,3}|reach\w{0,3}|连接|连)\s?(?:to\s)?(?P<addr>localhost|127\.0\.0\.1)"
    r":(?P<port>\d{2,5})\b[^\n]{0,80}?(?:refused|failed|fails|失败|拒绝)",
    "a person saying a client could not connect to the loopback's port (its own machine)",
)
INIT_PROCESS_GROUP = sign(
    "launch.init_process_group",
    r"init_process_group",
    "init_process_group is named (the code or the error sets up the process group)",
)
NNODES = sign(
    "launch.nnodes",
    r"--(?:nnodes|num[_-]machines|num[_-]nodes)(?:[= ]{1,10}(?P<n>\d{1,6})(?::(?P<m>\d{1,6}))?\b)?",
    "a launch's node count (torchrun's --nnodes, accelerate's --num_machines, deepspeed's "
    "--num_nodes): the count, an elastic MIN:MAX range (n and m), or neither where a variable "
    "gives it (--nnodes=$NNODES); read through nccl_doctor.facts.span",
    case=True,
)
ROOT_RANK_TWICE = sign(
    "launch.root_rank_twice",
    r"Bootstrap Root : rank (?P<rank>\d{1,7}) of (?P<n>\d{1,7}) ranks has already checked in",
    "NCCL's bootstrap root got the same rank from two processes of one communicator (its root "
    "thread then gives up, and every rank waits in init)",
    case=True,
)
ROOT_SIZE_MISMATCH = sign(
    "launch.root_size_mismatch",
    r"Bootstrap Root : mismatch in (?:info from procs, nranks (?P<a>\d{1,7}) vs (?P<b>\d{1,7})"
    r"|rank count from procs (?P<c>\d{1,7}) : (?P<d>\d{1,7}))",
    "NCCL's bootstrap root got two world sizes for one communicator (processes of two launches, "
    "or launches that disagree on the world size)",
    case=True,
)
MESH_FAILURE = sign(
    "launch.mesh_failure",
    r"connectFullMesh failed|Connection refused|duplicate rank|rank \d{1,6} (?:is )?already",
    "gloo's full-mesh connect failing or a rank claimed twice (what duplicate ranks print)",
    case=True,
)
LAUNCHER_THREADS = sign(
    "launch.launcher_threads",
    r"Setting OMP_NUM_THREADS environment variable for each process to be \S{1,20} in default",
    "torchrun's (torch.distributed.launch's) notice as it starts several worker processes",
    case=True,
)
#: torch.distributed set up on gloo: the backend argument or option (``backend='gloo'``,
#: ``--dist-backend gloo``, a config's ``dist_backend: gloo``), or the script saying so
GLOO_BACKEND = sign(
    "launch.gloo_backend",
    r"backend[\"']?\s{0,3}[=:]\s{0,3}[\"']?gloo\b|--(?:dist[-_])?backend[= ][\"']?gloo\b"
    r"|\b(?:with|using) (?:the )?gloo backend\b|init_process_group\(\s{0,3}[\"']gloo\b"
    # a job or manifest named for it (Kubeflow's pytorch_job_mnist_gloo.yaml)
    r"|[a-z0-9][_-]gloo[_.-][a-z0-9]",
    "the job runs torch.distributed on gloo (backend='gloo', --backend gloo, a gloo job)",
)
#: NCCL named on a kept line (a log line, a package, a setting, the reporter's words)
NCCL_NAMED = sign("launch.nccl_named", r"nccl", "NCCL named anywhere in the evidence")
SPAWN_CALL = sign(
    "launch.spawn_call",
    r"\bmp\.spawn\(|multiprocessing\.spawn\(|start_processes\("
    # an inference engine made with tensor parallelism starts a worker per GPU itself
    # (vLLM's LLM(..., tensor_parallel_size=4)), unless told the launcher starts them
    r"|\bLLM\((?![^)\n]{0,300}?external_launcher)[^)\n]{0,200}?\btensor_parallel_size\s?=\s?[2-9]",
    "code calling torch.multiprocessing's spawn (mp.spawn starts ranks itself), or making an "
    "inference engine with tensor parallelism (vLLM's LLM(tensor_parallel_size=N) starts its "
    "own workers)",
)
#: torchrun (or torch.distributed.launch/run) running a script that is told to start its own
#: worker per GPU: detectron2's (and fvcore's) ``--num-gpus N`` makes its ``launch()`` spawn N
#: processes, so each torchrun worker starts N more.
SCRIPT_SPAWNS = sign(
    "launch.script_spawns",
    r"(?:\btorchrun\b|torch\.distributed\.(?:launch|run)\b)[^\n]{0,300}?\.py\b[^\n]{0,300}?"
    r"\s(?P<flag>--num-gpus[= ]\s?(?:[2-9]|\d{2}))\b",
    "torchrun running a script with its own --num-gpus N above one (detectron2's launch spawns "
    "N workers itself)",
    case=True,
)
TASKS_PER_NODE = sign(
    "launch.tasks_per_node",
    r"--ntasks-per-node[= ]{1,10}(?P<n>\d{1,6})",
    "Slurm's --ntasks-per-node (how many tasks srun starts on each node)",
)
LIGHTNING_MEMBER = sign(
    "launch.lightning_member",
    r"(?:initializing ddp|Initializing distributed): GLOBAL_RANK: (?P<rank>\d{1,6}), "
    r"MEMBER: \d{1,6}/(?P<world>\d{1,6})",
    "each Lightning process announcing its global rank in a world of N (PL 1.0 'initializing "
    "ddp', 1.6+ 'Initializing distributed')",
)
SRUN_LAUNCHER = sign(
    "launch.srun_launcher",
    # (DeepSpeed's CLI by name, not the Trainer's --deepspeed flag or a deepspeed_* setting;
    # gpt-neox's deepy.py hands its arguments to DeepSpeed's runner)
    r"srun\b.{0,2000}?(?P<launcher>\btorchrun\b|torch\.distributed\.(?:launch|run)\b"
    r"|\baccelerate\s+launch\b|(?<![\w./-])deepspeed(?=\s+(?:--|[\w./-]+\.py\b))"
    r"|\bdeepy\.py\b)",
    "srun running a launcher that starts one worker per GPU itself (torchrun or "
    "torch.distributed.launch, accelerate launch, the deepspeed CLI, gpt-neox's deepy.py) on "
    "one command line",
)

# -- the store's port ----------------------------------------------------------------------
ADDRESS_IN_USE = sign(
    "launch.address_in_use",
    r"(?s)^(?!.*nccl).*?\b(?:Address already in use|EADDRINUSE)\b",
    "a bind failing with 'Address already in use' on a line that is not NCCL's own",
)
STORE_PORT = sign(
    "launch.store_port",
    r"(?:--master[_-]port[= ]{1,10}[\"']?|--rdzv[_-]endpoint[= ]{1,10}\S{0,200}:"
    r"|MASTER_PORT[= ]{1,10}[\"']?|tcp://[\w.\-\[\]:]{1,200}:|main_process_port[= ]{1,10})"
    r"(?P<port>\d{2,5})",
    "the store's port as a launch flag, MASTER_PORT, a tcp:// init method or accelerate's",
)
#: A socket listening on a port, as ss, netstat or lsof list it ("LISTEN 0 4096 0.0.0.0:29500
#: 0.0.0.0:* users:((\"torchrun\",pid=2291877,fd=3))", "tcp 0 0 0.0.0.0:29500 0.0.0.0:*
#: LISTEN 2291877/python", "python 2291877 akumar 3u IPv4 ... TCP *:29500 (LISTEN)").
PORT_LISTENED = sign(
    "launch.port_listened",
    r"\bLISTEN\s{1,20}\d{1,10}\s{1,20}\d{1,10}\s{1,20}\S{0,60}:(?P<port>\d{2,5})\s"
    r"|\btcp6?\s{1,20}\d{1,10}\s{1,20}\d{1,10}\s{1,20}\S{0,60}:(?P<nport>\d{2,5})\s{1,20}\S{1,60}"
    r"\s{1,20}LISTEN\b"
    r"|\bTCP \S{0,60}:(?P<lport>\d{2,5}) \(LISTEN\)",
    "a socket listening on a port as ss, netstat or lsof list it (the port captured)",
    case=True,
)
# c10d's store client between connect attempts (torch/csrc/distributed/c10d/socket.cpp,
# SocketConnectOp): a timed-out attempt is a warning of its own (the SYN got no answer); a
# refused one is logged only at trace level, and every retry, whatever its cause, prints the
# every-30-seconds "No socket on (host, port) is listening yet" notice
STORE_CONNECT_TIMED_OUT = sign(
    "launch.store_connect_timed_out",
    r"The server socket on (?P<addr>\S{1,300}) has timed out, will retry",
    "a store connect attempt that got no answer at all before the kernel gave up on it",
)
STORE_NOT_LISTENING = sign(
    "launch.store_not_listening",
    r"No socket on \((?P<host>[^,\s]{1,255}), (?P<port>\d{1,5})\) is listening yet, will retry",
    "the store client retrying its connect to MASTER_ADDR:MASTER_PORT",
)
STORE_ADDRESS = sign(
    "launch.store_address",
    r"^(?P<before>.{0,500}?)(?:--master[_-]addr(?:ess)?[= ]{1,10}|\bMASTER_ADDR[= ]{1,10})"
    r"[\"']?(?P<addr>[A-Za-z0-9][\w.\-]{0,200})[\"']?(?P<after>.{0,500})",
    "the store's address as a launch flag or MASTER_ADDR (a literal name or address, not a "
    "shell variable), with the rest of the line around it",
)
TWO_JOBS = sign(
    "launch.two_jobs",
    r"(?:more than one|two|2|several|multiple|another|second)\s{1,10}(?:\w{1,40}\s{1,10})?"
    r"(?:jobs?|trainings?|runs?|finetunes?|experiments?|processes)|at the same time"
    r"|same machine|simultaneous\w{0,20}|in parallel",
    "a person saying several jobs ran at once on the machine",
)
NOBODY_ON_PORT = sign(
    "launch.nobody_on_port",
    r"(?:didn't|did not|no|not|nothing)\b.{0,40}\b(?:port|using|used|occupied)",
    "a person saying nothing else used the port",
)
OTHER_PORT_SAME = sign(
    "launch.other_port_same",
    r"(?:chang|modif|switch)\w{0,10}\b[^.\n]{0,40}\b(?:master_)?ports?\b[^\n]{0,80}"
    r"\b(?:still|same|again)\b"
    r"|\b(?:new|another|other|different|unused|random|free)\b[^.\n]{0,20}\b(?:master_)?ports?\b"
    r"[^\n]{0,80}\b(?:still|same (?:error|problem|issue|thing|message)|again)\b",
    "a person saying another port failed the same way (nothing else holds every port)",
)
SAME_PORT_NAMED = sign(
    "launch.same_port_named",
    r"\b(?:still|same)\b[^.\n]{0,40}\b(?:about|on|for|at|with|to|port)\s{0,2}:?\s{0,2}\d{4,5}\b",
    "a person saying the same error still names one port number (the port they set was not "
    "the one the program used: a hard-coded port, not the job binding twice)",
)
STORE_SETUP = sign(
    "launch.store_setup",
    r"TCPStore\(|_env_rendezvous_handler|_tcp_rendezvous_handler",
    "the script's own code or stack creating the c10d store (TCPStore, a rendezvous handler)",
)

# -- a rank that died -------------------------------------------------------------------------
MEMORY_WORDS = sign(
    "launch.memory_words",
    r"\b(?:memory|RAM|OOM|oom-kill\w{0,20}|killed process)\b|内存",
    "host memory or the OOM killer is mentioned (what a SIGKILL most often was)",
)

# -- the rendezvous ---------------------------------------------------------------------------
DDP_MEMBER = sign(
    "launch.ddp_member",
    r"(?:initializing ddp|Initializing distributed): GLOBAL_RANK: (?P<rank>\d{1,7}), "
    r"MEMBER: (?P<member>\d{1,7})/(?P<size>\d{1,7})",
    "Lightning's 'Initializing distributed: GLOBAL_RANK: r, MEMBER: m/n' (a rank registered)",
)
ALL_REGISTERED = sign(
    "launch.all_registered",
    r"All (?:DDP|distributed) processes registered\. Starting (?:ddp )?with (?P<n>\d{1,7}) "
    r"processes",
    "Lightning's rank 0 once init_process_group returned on every rank (PL 1.x 'All DDP "
    "processes registered. Starting ddp with N processes', 1.6+ 'All distributed ...')",
)
INIT_PHASE = sign(
    "launch.init_phase",
    r"initiali[sz]\w{0,20} (?:ddp|distributed|process group)|init_process_group|rendezvous"
    r"|initializing ddp",
    "the line speaks of the job's initialisation (DDP, the process group, the rendezvous)",
)
FILE_STORE = sign(
    "launch.file_store",
    r"\b(?:init[_ ]method|dist[_-]url)\b\W{0,6}file://",
    "the process group's store is a file (init_method='file://...'): torch's FileStore",
)
INIT_PASSED = sign(
    "launch.init_passed",
    r"(?:init_process_group|initiali[sz]\w{0,20} (?:ddp|distributed|process group))\b.{0,40}"
    r"\b(?:returns|returned|passes|passed|completes|completed|succeeds|succeeded|finishe[sd]"
    r"|works fine|is fine|goes fine|went fine)\b"
    r"|\bafter (?:the )?(?:dist\.|torch\.distributed\.)?init_process_group"
    # "gets through init_process_group and then hangs at the first all_reduce"
    r"|\b(?:gets?|got|goes|went|passe[sd]|makes? it|made it) (?:through|past) (?:the )?"
    r"(?:dist\.|torch\.distributed\.)?(?:init_process_group|initiali[sz]ation|rendezvous)"
    # the rendezvous itself said to work, or every node or worker said to have joined ("the
    # torchrun rendezvous works fine: both nodes join and the 8 workers start")
    r"|\brendezvous (?:works|worked|is fine|goes fine|went fine|succeeds|succeeded|completes"
    r"|completed|passes|passed)\b"
    r"|\b(?:both|all) (?:\d{1,4} )?(?:nodes|ranks|workers|processes) (?:join|joined|connect"
    r"|connected|start|started|come up|came up)\b"
    # Chinese: "init_process_group gets through normally", "initialisation succeeded" (not
    # "did not get through")
    r"|(?:init_process_group|初始化)[^，。,.;！？]{0,12}?"
    r"(?:(?<![不没未有])(?:过去|通过|完成|成功)|没(?:有)?问题)",
    "the reporter says the job's initialisation got through (the hang they name comes later)",
)
SBATCH_NODES = sign(
    "launch.sbatch_nodes",
    r"#SBATCH\s{1,10}(?:--nodes|-N)[= ]{0,10}(?P<n>\d{1,6})",
    "an sbatch script's node count",
)
BARE_PYTHON = sign(
    "launch.bare_python",
    r"^\s{0,40}python3?\s{1,10}\S{1,300}\.py\b",
    "a script line that runs python directly (not through srun or a launcher)",
)
SRUN_PYTHON = sign(
    "launch.srun_python",
    r"^\s{0,40}srun\b.{0,2000}python",
    "a script line that runs python through srun",
)
BARRIER_DONE = sign(
    "launch.barrier_done",
    r"Completed store-based barrier",
    "c10d's store-based barrier completed (every rank arrived, at least once)",
)
BARRIER_WAITING = sign(
    "launch.barrier_waiting",
    r"Waiting in store based barrier",
    "c10d still waiting in its store-based barrier (a progress line, not yet a failure)",
    case=True,
)
NODE_PLACED = sign(
    "launch.node_placed",
    r"--(?P<rank>node|machine)[_-]rank|--rdzv[_-](?:backend|endpoint)|--rdzv_id|\bsrun\b|--hostfile",
    "a launch that places each node (a node or machine rank, captured as rank; a c10d "
    "rendezvous, srun, a hostfile)",
    case=True,
)
NODE_RANK = sign(
    "launch.node_rank",
    r"--node[_-]rank[= ]{1,10}[\"']?(?P<n>\d{1,6})\b",
    "a launch's --node_rank as a number (n): the node it starts, 0 being the one that hosts "
    "the store under static rendezvous",
    case=True,
)
LOCAL_ONLY = sign(
    "launch.local_only",
    r"Unable to find hostfile, will proceed with training with local resources only",
    "DeepSpeed's runner found no hostfile and starts the job on this node alone, its "
    "store on 127.0.0.1 (deepspeed/launcher/runner.py, fetch_hostfile)",
    case=True,
)
#: A launcher that builds torchrun's flags from its environment: llamafactory-cli
#: (FORCE_TORCHRUN, NNODES, NODE_RANK, NPROC_PER_NODE, MASTER_ADDR/PORT: src/llamafactory/
#: cli.py) and ms-swift's swift commands (the same names)
ENV_LAUNCHER = sign(
    "launch.env_launcher",
    r"\bllamafactory-cli\b|\bswift\s+(?:sft|pt|rlhf|train)\b",
    "a launcher that takes the node count and node rank from NNODES and NODE_RANK "
    "(llamafactory-cli, ms-swift's swift sft/pt/rlhf)",
    case=True,
)
LAUNCHER_COMMAND = sign(
    "launch.launcher_command",
    r"torchrun|torch\.distributed\.(?:launch|run)|multiproc|launch\.py",
    "a PyTorch launcher is named on the line (torchrun, torch.distributed.launch, launch.py)",
    case=True,
)

#: The rank the others wait for said to be alive at its own work when they time out ("rank 0
#: is still writing the checkpoint", "rank 0 is still sitting at the 'You: ' prompt"): a long
#: rank-local step (app.hang), not a death. The differential's cue and launch.rank_crash read it.
RANK_STILL_BUSY = sign(
    "launch.rank_still_busy",
    r"\brank ?(?P<rank>\d{1,5})(?:'s)?\b[^.;\n]{0,80}?"
    r"\b(?:is still|was still|still|in the middle of)"
    # (not "prints nothing")
    r"\b[^.;\n]{0,20}?\b(?:writ\w*|sav\w*|print(?:s|ed|ing)?\b(?! nothing\b| no\b)"
    r"|evaluat\w*|validat\w*|infer\w*|comput\w*|generat\w*|tokeniz\w*|load\w*|preprocess\w*"
    r"|sampl\w*|decod\w*|download\w*|scor\w*"
    r"|running|busy|working|advanc\w*|progress\w*"
    # waiting on a person: at a prompt, in input()
    r"|(?:sitting|waiting|blocked|stuck) (?:at|on|in|for) (?:the |an? )?"
    r"(?:[\"'\u201c][^\"'\u201d]{0,20}[\"'\u201d] )?(?:prompt|input\b|user))",
    "a person saying the rank the others wait for is still at its own work when they time out",
)
#: One rank failed on its own first and the others then waited for it, in the reporter's words
#: ("rank 5 prints a KeyError and exits, then all the other ranks die with the watchdog
#: timeout", "the earliest error is rank 17's FileNotFoundError, 30 minutes before the other
#: ranks' timeouts"): the peer that left is the cause, the others' timeouts or resets follow.
#: The differential's cue and launch.rank_crash read it.
RANK_FAILED_FIRST = sign(
    "launch.rank_failed_first",
    # (the rank by its number, or "one of the ranks on node gpu03")
    r"\b(?:(?:(?:local_|global_)?rank|process|worker|node)\s?\d+"
    r"|one of the (?:ranks|processes|workers))\b[^.;\n]{0,80}?\b(?:throws?|threw|raises?"
    r"|raised|crash\w{0,4}|dies|died|exits?|exited|segfault\w{0,4}|fail(?:s|ed)?"
    # (what it prints or hits is an error: "rank 0 prints the loss" is no failure)
    r"|(?:prints?|printed|hits?|gets?|got|reports?)\s(?:[\w'.()]+\s){0,6}?"
    r"(?:\w*Error|\w*Exception|errors?|exceptions?|traceback|assert\w*))\b"
    r"[^\n]{0,200}?\b(?:(?:all )?the (?:other|rest|remaining)|other ranks"
    r"|ranks? \d+ ?(?:-|to) ?\d+)\b"
    r"[^.;\n]{0,80}?\b(?:timed? ?out|timeouts?|hang|hung|wait\w{0,3}|sit|sat|stuck"
    r"|block\w{0,3}|Connection (?:reset|closed))"
    # the earliest error named by its rank, before the others' timeouts ("the earliest
    # error is rank 17's FileNotFoundError, 30 minutes before the other ranks' NCCL
    # timeouts"; Chinese: "the earliest error is rank 17's Python exception ... 30 minutes
    # earlier than the other ranks' NCCL timeouts")
    r"|\b(?:earliest|first) (?:error|failure|exception|traceback|thing|message|line)\b"
    r"[^.;\n]{0,80}?\brank ?\d+\b[^\n]{0,160}?\b(?:before|earlier than) (?:all )?(?:the )?"
    r"(?:other|rest|remaining|everyone|everybody)"
    # the first error of the job pinned on a rank that raised or died of its own ("the first
    # error in the whole job is much earlier: rank 9 raised a FileNotFoundError")
    r"|\b(?:earliest|first) (?:error|failure|exception|traceback)\b[^.;\n]{0,100}?"
    r"\brank ?\d+\b[^.;\n]{0,40}?\b(?:raised|raises|threw|throws|died|crashed|segfaulted)\b"
    # a rank's own end dated before the others' timeouts ("about 30 minutes before node 1's
    # timeouts, the agent logged that local_rank 2 failed with exitcode -11")
    r"|\b\d+ (?:min\w{0,5}|seconds?|hours?) (?:before|earlier than)\b[^.;\n]{0,60}?"
    r"\b(?:timeouts?|timed out)\b[^.;\n]{0,80}?\b(?:local_|global_)?rank ?\d+\b[^.;\n]{0,40}?"
    r"\b(?:failed|died|crashed|exited|segfaulted|raised|threw)\b"
    # Chinese: "the torchrun on node 2 reported first: local_rank 5 (global rank 13) exited
    # with -9"
    r"|(?:最先|最早|首先)(?:的)?(?:报错|出错|挂掉|崩溃|退出)[^。；\n]{0,80}?rank ?\d+"
    r"[^。；\n]{0,40}?(?:退出|报错|异常|崩溃|挂|SIGKILL|SIGSEGV|-9|Error)"
    r"|最早(?:的)?(?:一条|一个)?(?:报错|错误|异常)[^。；\n]{0,60}?rank ?\d+[^\n]{0,120}?"
    r"(?:比|早于)[^。；\n]{0,20}?其他"
    # the launcher's summary retold: its root cause (the first failure it observed) ended by
    # a signal of the process's own fault, not one sent to it (SIGTERM, SIGKILL)
    r"|\broot cause\b[^.;\n]{0,80}?(?:\bexit ?code:? ?-(?:4|6|7|8|11)\b"
    r"|\bSIG(?:SEGV|ABRT|BUS|FPE|ILL)\b|\bSignal (?:4|6|7|8|11)\b)",
    "a person saying one rank failed with its own error first and the others then waited",
)
