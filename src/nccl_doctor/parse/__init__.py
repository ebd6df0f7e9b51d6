"""Parsers: evidence lines -> typed facts. One module per evidence kind.

The order of the lists is the order in which a line is offered: a more
specific format comes before a more general one.
"""

from __future__ import annotations

from nccl_doctor.parse.base import BlockParser, FileParser, StreamParser
from nccl_doctor.parse.collect_env import CollectEnvParser
from nccl_doctor.parse.dcgm import DcgmParser
from nccl_doctor.parse.dcgm_json import DcgmJsonParser
from nccl_doctor.parse.env import EnvParser
from nccl_doctor.parse.flight_recorder import FlightRecorderParser
from nccl_doctor.parse.infiniband import (
    Ibdev2netdevParser,
    IbstatParser,
    IbstatusParser,
    IbvDevinfoParser,
)
from nccl_doctor.parse.live_host import LiveHostParser
from nccl_doctor.parse.nccl_log import NcclLogParser
from nccl_doctor.parse.nccl_tests import NcclTestsParser
from nccl_doctor.parse.ncclras import RasJsonParser, RasTextParser
from nccl_doctor.parse.nvidia_smi import NvidiaSmiParser
from nccl_doctor.parse.nvidia_smi_csv import NvidiaSmiCsvParser
from nccl_doctor.parse.nvidia_smi_q import NvidiaSmiQParser
from nccl_doctor.parse.nvidia_smi_xml import NvidiaSmiXmlParser
from nccl_doctor.parse.nvlink import NvlinkParser
from nccl_doctor.parse.probe_result import ProbeResultParser
from nccl_doctor.parse.run_manifest import RunManifestParser
from nccl_doctor.parse.stacks import StacksParser
from nccl_doctor.parse.topo import TopoParser
from nccl_doctor.parse.torchrun import TorchrunParser
from nccl_doctor.parse.traceback import TracebackParser
from nccl_doctor.parse.version_print import VersionPrintParser
from nccl_doctor.parse.xid import XidParser

BLOCK_PARSERS: tuple[type[BlockParser], ...] = (
    NvidiaSmiXmlParser,
    NvidiaSmiQParser,
    NvidiaSmiParser,
    NvidiaSmiCsvParser,
    TopoParser,
    NvlinkParser,
    IbstatusParser,
    IbstatParser,
    IbvDevinfoParser,
    Ibdev2netdevParser,
    CollectEnvParser,
    VersionPrintParser,
    NcclTestsParser,
    LiveHostParser,
    ProbeResultParser,
    RunManifestParser,
    RasTextParser,
    DcgmParser,
)

STREAM_PARSERS: tuple[type[StreamParser], ...] = (
    TracebackParser,
    StacksParser,
    XidParser,
    NcclLogParser,
    TorchrunParser,
    EnvParser,
)

#: Every evidence kind a parser reads, in the order of the public list.
KINDS: tuple[str, ...] = tuple(p.kind for p in BLOCK_PARSERS + STREAM_PARSERS)

#: Parsers of whole files the line reader does not read (binary dumps, JSON reports).
FILE_PARSERS: tuple[type[FileParser], ...] = (FlightRecorderParser, RasJsonParser, DcgmJsonParser)
KINDS = tuple(dict.fromkeys((*KINDS, *(p.kind for p in FILE_PARSERS))))


def file_parser(head: bytes) -> type[FileParser] | None:
    """The whole-file parser of a file whose first bytes are ``head``, if any."""
    return next((p for p in FILE_PARSERS if p.sniff(head)), None)


__all__ = [
    "BLOCK_PARSERS",
    "FILE_PARSERS",
    "KINDS",
    "STREAM_PARSERS",
    "BlockParser",
    "FileParser",
    "StreamParser",
    "file_parser",
]
