"""Where the job runs and what shares it: containers, Kubernetes, WSL, MIG, several nodes,
another job or leftover processes on the GPUs, the job's own ranks on one GPU, hosts with
one name, the network between them (a filter, loopback, one node or a group of them).
"""

from __future__ import annotations

from nccl_doctor.differential.cues.base import Cue, cue
from nccl_doctor.differential.prose import NOT_SAID, rx
from nccl_doctor.signs.languages import MULTI_NODE_OTHER
from nccl_doctor.signs.net import MULTI_NODE_ZH

PLACE: dict[str, Cue] = {
    # (not denied: "bare metal, no container", "not inside docker", "outside containers")
    "container": cue(
        rf"{NOT_SAID}(?<!not inside )(?<!not in a )(?<!outside )(?<!outside of )"
        r"\b(?:docker|containers?|kubernetes|k8s|pods?|singularity|apptainer|enroot)\b|容器",
        in_question=True,
    ),
    # the containers are Kubernetes pods: each pod's address is routable across the cluster
    # (its network plugin gives a flat network), unlike a Docker bridge address
    "kubernetes": cue(
        rf"{NOT_SAID}\b(?:kubernetes|k8s|kubectl|kubeflow|PyTorchJob|kuberay|jobset|volcano|GKE"
        r"|EKS|AKS)\b"
        rf"|{NOT_SAID}\bpods?\b",
        in_question=True,
    ),
    # two containers of one machine: NCCL's host identity decides what they share
    "containers_same_host": cue(
        r"\b(?:multiple|several|two|\d+)\s+(?:docker\s+)?containers?\b[^.!?;\n]{0,60}"
        r"\bsame (?:machine|node|host|server)\b"
        r"|\bacross (?:the )?(?:docker )?containers? (?:in|on) (?:the )?same (?:machine|node|host)",
        in_question=True,
    ),
    # two machines NCCL may take for one: the same hostname on both ("every line on both
    # machines starts with localhost as the host name"), or NCCL's intra-node transports
    # between ranks on different machines ("rank 3 to rank 4 goes via P2P/IPC even though rank
    # 4 is on the other server"): their host hashes collide
    "hosts_look_alike": cue(
        r"\b(?:localhost|the same (?:host ?name|name))\b[^.!?;\n]{0,30}\bas (?:the|their|its) "
        r"host ?name\b"
        r"|\b(?:host ?names?|hostnames?)\b[^.!?;\n]{0,30}\b(?:are|is) (?:all |both )?"
        r"(?:the same|identical|localhost)\b"
        r"|\b(?:P2P/IPC|P2P/CUMEM|SHM/direct|via (?:P2P|SHM|IPC))\b[^.!?;\n]{0,60}"
        r"\b(?:other|another|different|second|remote) (?:server|node|machine|host|box)\b",
        in_question=True,
    ),
    "wsl": cue(
        rf"{NOT_SAID}\bWSL ?2?\b|{NOT_SAID}\bWindows Subsystem for Linux\b", in_question=True
    ),
    # two machines set side by side ("two identical workstations", "on server A ... on server
    # B"): a comparison of separate jobs, not one job across them
    "machines_compared": cue(
        r"\b(?:two|2) [\"'\u201c]?(?:identical|same|similar)[\"'\u201d]? (?:\w+ )?"
        r"(?:machines|servers|workstations|nodes|boxes|hosts)\b"
        r"|\b(?:machine|server|workstation|box|host) [AB]\b[^.!?\n]{0,120}"
        r"\b(?:machine|server|workstation|box|host) [AB]\b",
        in_question=True,
    ),
    "multi_node": cue(
        # (not "this is not an inter-node job", "we never ran multi-node")
        rf"{NOT_SAID}\b(?:multi|inter)[- ]?node\b"
        rf"|{NOT_SAID}\b(?:multiple|several|two|\d+) (?:\w+ )?(?:nodes|hosts|machines)\b"
        rf"|{NOT_SAID}\bmore than (?:one|1) (?:node|host|machine|server)\b"
        rf"|{NOT_SAID}\bmulti[- ]?(?:machine|server|host)\b"
        r"|\b(?:two|three|four|eight|[2-9]|\d{2,4})-(?:node|machine|host)\b"
        r"|\bacross (?:two|several|multiple|\d+) (?:servers|machines|hosts|nodes)\b"
        r"|\b(?:on|with) (?:a )?single (?:node|machine)\b[^.!?;\n]{0,30}\bbut\b[^.!?;\n]{0,30}"
        r"\b(?:two|several|multiple|more|\d+)\b"
        r"|\b(?:num[_-]?nodes|nnodes)\s*(?:>=?|=)\s*[2-9]|\bacross (?:the )?nodes\b"
        r"|\b(?:the )?(?:second|both) (?:nodes?|machines?|hosts?)\b"
        rf"|{MULTI_NODE_ZH}|{MULTI_NODE_OTHER}",
        in_question=True,
    ),
    # MIG in use ("using MIG instances", "NCCL with MIG", a MIG-<uuid> device), not ruled out
    # ("not MIG parted", "MIG disabled")
    "mig": cue(
        rf"{NOT_SAID}\bMIG\b(?! (?:is |was )?(?:disabled|off|not enabled))|\bMulti-Instance GPU\b"
        r"|\bMIG-[0-9a-f]{8}-",
        in_question=True,
    ),
    # two jobs launched on one machine ("two experiments in one docker image", "two copies of
    # the code at the same time"): both launchers take the same default port (not the same
    # GPUs: other_job_same_gpus)
    "jobs_share_host": cue(
        r"\b(?:two|2|another|second|multiple|several) (?:\w+ ){0,2}(?:jobs?|trainings?"
        r"|experiments?|copies|runs|instances|programs|scripts|tasks)\b[^.\n]{0,60}"
        r"\b(?:(?:on|in) (?:the )?(?:same|one) (?:machine|node|host|server|docker|container|image)"
        r"|at the same time|simultaneously|in parallel|concurrently)\b",
        unless=rx(r"\bsame (?:\w+ ){0,3}GPUs?\b"),
    ),
    # another job (not the job's own ranks) on the same GPUs
    "other_job_same_gpus": cue(
        r"\b(?:two|another|other|second|several|multiple) (?:\w+ ){0,2}(?:jobs?|trainings?"
        r"|training process(?:es)?|runs|experiments?|programs?)\b[^.!?;\n]{0,40}"
        r"\bsame (?:\w+ ){0,3}GPUs?\b"
        # a process, model or service not the job's ("another process uses the same GPU"):
        # two of the job's own processes on one GPU are nccl.duplicate_gpu, so only "another"
        rf"|{NOT_SAID}\b(?:another|other|a different) (?:\w+ ){{0,2}}"
        r"(?:process(?:es)?|models?|services?|users?)\b[^.!?;\n]{0,40}"
        r"\b(?:same|one of (?:the|its|my|our)) (?:\w+ ){0,3}GPUs?\b"
    ),
    # something else already holds the GPUs: another user's job, processes an earlier run left
    # behind, a display server ("another user's job was already running on GPUs 2 and 3",
    # "zombie processes from a killed run still hold memory on every GPU", "Xorg runs on the
    # same GPUs"); not once they are gone and it still fails
    "gpu_held_by_other": cue(
        rf"{NOT_SAID}\b(?:another|other|a different) (?:user|job|person|team)(?:'s|s'?)?\b"
        r"[^.!?;\n]{0,40}\b(?:already|still) (?:running|using|occupying|on|holds?|holding)\b"
        r"[^.!?;\n]{0,20}\b(?:GPUs?|cards?)\b"
        rf"|{NOT_SAID}\b(?:zombie|leftover|left-over|stale|orphan\w*|defunct|dangling) "
        r"(?:\w+ ){0,2}process(?:es)?\b[^.!?;\n]{0,60}\b(?:GPUs?|memory|cards?)\b"
        r"|\b(?:Xorg|X server|X11|gnome-shell|display manager)\b[^.!?;\n]{0,40}"
        r"\b(?:runs|running|on) (?:on )?(?:the )?(?:same |compute |training )?GPUs?\b"
        # someone else's process seen holding memory there ("a python process from another lab
        # member's account holding about 31 GB on GPU 2")
        rf"|{NOT_SAID}\bprocess(?:es)?\b[^.!?;\n]{{0,40}}\b(?:another|other|a different) "
        r"(?:\w+ ){0,2}(?:user|member|colleague|person|team|account)s?(?:'s?)?\b[^.!?;\n]{0,60}"
        r"\b(?:holding|holds|using|uses|occupying|occupies)\b[^.!?;\n]{0,30}"
        r"\b(?:\d+ ?(?:GB|GiB|MiB|MB|G)|memory)\b",
        unless=rx(r"\bstill (?:fails?|failed|hangs?|crash\w*|the same)|\beven after\b"),
    ),
    # two of the job's own processes on one GPU: one communicator cannot hold two ranks on a
    # device ("colocated on the same GPU", "a duplicated GPU", "two processes per card", more
    # processes than GPUs, the trainer defaulting to cuda:0 that a server already uses);
    # another user's or job's process there is gpu.contention (other_job_same_gpus), and
    # "the two processes run on the same GPU" alone is the ranks' mapping (prose's
    # gpu_imbalance: set_device missing, cuda.device_visibility)
    "ranks_share_gpu": cue(
        r"\bcolocat\w*\b[^.;\n]{0,60}\b(?:same|one) (?:GPU|card|device)\b"
        r"|\b(?:same|one) (?:GPU|card|device)\b[^.;\n]{0,60}\bcolocat\w*"
        r"|\bduplicated? (?:GPUs?|cards?|devices?)\b"
        r"|\bmore (?:processes|ranks|workers) than (?:there are )?(?:GPUs|cards|devices)\b"
        r"|\b(?:two|2|several|multiple) (?:processes|ranks|workers) (?:per|on each|on every"
        r"|on one|on a single) (?:GPU|card|device)\b|\btwo per (?:GPU|card|device)\b"
        r"|\b(?:lands?|landed|ends? up|defaults?(?: to)?|falls? back to)(?: on)? "
        r"(?:cuda:0|GPU ?0|device 0)\b[^.;\n]{0,40}\balready\b"
        r"|\bsame (?:GPU|device|card) as (?:the |a |an |one )?(?:vLLM|rank|server|worker|actor"
        r"|trainer|inference|rollout|generation|engine)",
        unless=rx(r"\b(?:another|other) (?:user|people|team|job)|\bnot (?:on )?the same\b"),
    ),
    # two hosts that say the same name: NCCL tells hosts apart by their hostname (with the
    # boot id) and takes the ranks of both for one machine ("containers share a hostname")
    "same_hostname": cue(
        r"\b(?:same|identical|duplicate\w*) (?:host ?names?|hostnames?)\b"
        r"|\b(?:host ?names?|hostnames?) (?:are|is|were|was) (?:the same|identical)\b"
        # one name set for every host ("both services have hostname: trainer", "a fixed
        # hostname 'worker' for all replicas", "hostname dou hai shi localhost.localdomain"),
        # and NCCL counting one node for several ("nNodes 1" said of two VMs)
        r"|\b(?:both|all|every|each)\b[^.;\n]{0,30}\bhostname\s{0,2}[:=]\s{0,2}\S"
        r"|\b(?:fixed|static|hard-?coded|same) hostname\b[^.;\n]{0,40}"
        r"\b(?:for )?(?:all|every|each|both)\b"
        r"|hostname\s?都(?:是|还是|叫)|\bnNodes 1\b",
    ),
    # the host's name resolves to the loopback address: peers are told to connect to 127.0.x.1
    "loopback_host": cue(
        # (a call's line keeps its dots: gethostbyname(socket.gethostname()) returned 127.0.1.1)
        r"\bgethostbyname\b.{0,80}\b127\.0\.[01]\.1\b"
        r"|\b(?:hostname|host name)\b[^.!?;\n]{0,60}\b(?:resolv\w*|points?|maps?|mapped)\b"
        r"[^.!?;\n]{0,20}"
        r"\b(?:to )?(?:127\.0\.[01]\.1|localhost|loopback)\b"
    ),
    # something between the hosts filters TCP: a firewall, SELinux, a cloud security group, a
    # Kubernetes network policy, a service-mesh sidecar that proxies the pods' traffic, an
    # endpoint-security product ("no firewall", "the firewall is disabled" rule it out)
    "traffic_filtered": cue(
        # (not the service a command stops or disables: "systemctl stop firewalld")
        rf"{NOT_SAID}(?<!stop )(?<!disable )(?<!--now )\b(?:firewall\w*|firewall-cmd|iptables|ufw"
        r"|SELinux|security[- ]groups?|network[- ]?polic(?:y|ies)|istio|envoy|sidecar\w*"
        r"|service mesh|antivirus|endpoint security)\b"
        r"(?! (?:is|was|are|were) (?:already |also )?(?:disabled|off|down|inactive|stopped"
        r"|turned off|not (?:running|active|enabled)))"
        # Chinese "firewall", unless the clause says it was turned off or stopped
        r"|防火墙(?![^。，,；;\n]{0,8}(?:关|停|禁))"
        # a cloud security group, a network policy: Chinese, unless it lets everything through
        r"|(?:安全组|网络策略)(?![^。，,；;\n]{0,12}(?:全部放行|放行所有|全放开|关))",
        # (nor one said not to be there: "they say there is none between compute nodes")
        unless=rx(r"\bthere (?:is|are|was|were) none\b|\bnone between\b"),
    ),
    # a port of the peer probed by hand and not reached ("nc -zv to the peer's eth1 address
    # on any port just times out", "telnet 172.16.3.21 29500 hangs"; Chinese "telnet ... 一直
    # 卡着连不上"): the path between the hosts drops the connection
    "port_probe_fails": cue(
        r"\b(?:nc|ncat|netcat|telnet)\b(?:[^.;\n]|\.(?!\s)){0,80}?\b(?:times? out|timed out"
        r"|hangs?|hung|never connects?|(?:can(?:no|')t|could(?: not|n't)) connect|no route"
        r"|is stuck|gets? stuck)\b"
        r"|\b(?:nc|ncat|netcat|telnet)\b[^。；\n]{0,60}?(?:一直卡|卡住|连不上|超时)",
        unless=rx(
            r"\b(?:nc|ncat|netcat|telnet)\b[^.;\n]{0,40}\b(?:works?|succeed\w*|connects?)\b"
            r"[^.;\n]{0,20}$"
        ),
    ),
    # it fails on one node only: "only on this node", "the same job on another node works fine"
    "one_node_only": cue(
        # "only on this node", "only on node 3" (not "works only with one GPU": a count of GPUs)
        r"\bonly (?:on|with) (?:one|a single|this|that) (?:node|machine|host|server)\b"
        r"|\bonly on (?:node|machine|host|server)[ -]?\w"
        r"|\bonly (?:fails|happens|occurs|hangs|crashes) on (?:node|machine|host|server)[ -]?\w"
        r"|\bonly (?:one|a single) (?:node|machine|host|server) (?:has|shows|sees|hits)\b"
        r"|\b(?:same|this) (?:job|code|script|command|program|model|config\w*)\b[^.!?;\n]{0,30}"
        r"\b(?:on|with) (?:a |an |the )?(?:different|another|other) (?:nodes?|machines?|hosts?"
        r"|servers?)\b[^.!?;\n]{0,20}\b(?:works?|worked|runs? fine|is fine|passe[sd])"
        r"|\b(?:works?|worked|runs? fine) (?:fine |well )?on (?:all )?(?:the )?(?:other|different)"
        r" (?:nodes|machines|hosts|servers)\b"
        # "3 of the replicas are running in stable state, the 4th keeps restarting": some of
        # them, in the same clause ("we train on 2 nodes, NCCL works on one" says the opposite)
        r"|\b(?:(?:\d{1,3}|two|three|four|five|six|seven) of the|all (?:the )?other|the other"
        r"|the remaining) (?:replicas|nodes|machines|hosts|servers|pods|instances)\b[^,;.\n]{0,30}"
        r"\b(?:stable|fine|healthy|normal\w*|work)"
    ),
    # some nodes fail together while each group works: the nodes are not configured alike
    "node_groups": cue(
        r"\b(?:nodes?|hosts?)\b[^.]{0,40}\b(?:from|between)\b[^.]{0,40}\bwith\b[^.]{0,60}"
        r"\b(?:results? in|hangs?|fails?)"
        r"|\beach (?:group|pair) works\b|\b(?:groups?|pairs?) of nodes\b[^.!?;\n]{0,40}\bwork"
        # a job with a node of each group fails ("jobs that get one node from each rack hang")
        r"|\bone (?:node|host|machine|server) (?:from|of|in) each\b[^.!?;\n]{0,40}"
        r"\b(?:hangs?|hung|fails?|failed|crash\w*|times? out|timed out)\b"
    ),
    # the reporter says the port is taken ("port conflicts", "the port is already in use",
    # Chinese "端口被占用"): the bind of the store or rendezvous port failed (EADDRINUSE)
    "port_taken": cue(
        rf"{NOT_SAID}\bports? (?:conflict|collision|clash)\w*"
        rf"|{NOT_SAID}\b(?:port|address)\b(?:(?!\bnot\b|n't\b|\bnever\b)[^.\n]){{0,30}}"
        r"\b(?:is |are |was |were |being )?"
        r"(?:already (?:in use|used|taken|occupied)|in use|taken|occupied)\b"
        r"|端口(?:被)?(?:占用|冲突)|端口已(?:被)?(?:占用|使用)"
    ),
}
