"""Property tests: the nvidia-smi -q -x parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.nvidia_smi_xml import NvidiaSmiXmlParser
from tests.helpers import FORMATS
from tests.parse.mutations import (
    MUTATED_SETTINGS,
    RANDOM_SETTINGS,
    check_blocks,
    mutated,
    random_text,
)

FIXTURES = [
    p.read_bytes().decode("utf-8", errors="replace")
    for p in sorted((FORMATS / "nvidia-smi-xml").glob("*.txt"))
]
ENTITIES = (
    '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [\n<!ENTITY a "aaaaaaaaaa">\n'
    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">\n]>\n<nvidia_smi_log>\n<timestamp>&b;</timestamp>\n'
    "</nvidia_smi_log>\n"
)
FIXTURES.append(ENTITIES)
TOKENS = [
    '<?xml version="1.0" ?>\n',
    '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n',
    "<nvidia_smi_log>\n",
    "</nvidia_smi_log>\n",
    '<gpu id="00000000:01:00.0">',
    "</gpu>",
    "<processes>",
    "<process_info><pid>12</pid><used_memory>3 MiB</used_memory></process_info>",
    "<mig_devices><mig_device><index>0</index></mig_device></mig_devices>",
    "<fb_memory_usage><used>50 MiB</used></fb_memory_usage>",
    "<driver_version>535.54.03</driver_version>",
    "<attached_gpus>4</attached_gpus>",
    "<!ENTITY x 'y'>",
    "&x;",
    "<![CDATA[",
    "<",
    ">",
    "/",
    "\n",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES))
def test_mutated_fixtures(text: str) -> None:
    check_blocks(NvidiaSmiXmlParser(), text, whole=True)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_blocks(NvidiaSmiXmlParser(), text, whole=True)
