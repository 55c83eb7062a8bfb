"""What travels between clients and the server: the survey's configuration and randomized reports.

A report on the wire is ``{"id": "<client-generated UUID>", "values": {"<attribute>": "<cell>"}}``.
A cell is the attribute's *randomized* report in the cell format of the reports file
(``reidrisk.collect.reports_io``: ``"3"`` for GRR, ``"3|7|9"`` for the subset mechanism's h codes,
``"0|4"`` or ``"{}"`` for the bit indices of OUE/RAPPOR, a hash and value for local hashing); an
absent attribute or ``null`` is missing (a skipped question, or one the protocol did not sample).
Decoding and validation go through the reports file's own decoder and each mechanism's
``validate_reports``, then the protocol's ``check_reports`` (budget, at most k attributes per
person): the server accepts exactly what ``read_reports`` accepts in a file, and stores each cell
in one canonical spelling (``canonical_cell``: no leading zeros, a set's codes in increasing
order), so the stored cells do not tell apart the clients that wrote them.
"""

from __future__ import annotations

import functools
import json
import math
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reidrisk.collect.protocol import Protocol, ProtocolError, variance_factor

# the reports file's own cell decoder and mechanism rebuilder: one reader of reports
from reidrisk.collect.reports_io import (
    CollectedReports,
    ReportsFileError,
    codec_of,
    decode_column,
    jsonable,
    rebuild_mechanism,
    reports_frame,
)
from reidrisk.errors import ReidriskError
from reidrisk.mechanisms.base import Mechanism, MechanismError
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import Schema, SchemaError

SPEC_FORMAT = "reidrisk-survey"
SPEC_VERSION = 1
MAX_BATCH = 1000
"""Most reports in one batch request (a larger upload is split by the client)."""

# up to 18 digits: every code fits int64 (local hashing's hash parameters have 10 digits)
_CODES = re.compile(r"^(\{\}|[0-9]{1,18}(\|[0-9]{1,18})*)$")
_ORIGIN = Path("report")  # the decoder names its source; on the wire that is the report itself


SET_MECHANISMS = frozenset({"subset"})
"""Mechanisms whose "ints" report is a set (its codes in any order mean the same report); the
reports of the "bits" codec (unary encodings) are sets too. Every other multi-code report (local
hashing's hash parameters and value) is a tuple, its order meaningful."""


@functools.lru_cache(maxsize=1 << 16)
def canonical_cell(cell: str, is_set: bool) -> str:
    """The one spelling of a report cell: codes without leading zeros, a set's in increasing order.

    Two spellings of one report ("4|3|2", "02|3|4") would let the stored cells tell apart the
    clients that wrote them; the server stores only this form. The answers are cached (a
    domain's cells repeat), so the check costs a dictionary look-up per cell.

    Parameters
    ----------
    cell : str
        A cell of category codes separated by ``|``, or ``"{}"`` (an empty set), as ``cells_of``
        has checked it.
    is_set : bool
        Whether the cell's codes form a set (``SET_MECHANISMS``, the ``"bits"`` codec).

    Returns
    -------
    str
        The canonical cell.
    """
    if cell == "{}":
        return cell
    codes = [int(c) for c in cell.split("|")]
    return "|".join(map(str, sorted(codes) if is_set else codes))


class ReportError(ReidriskError, ValueError):
    """A report that is not a well-formed randomized report for the survey (HTTP 422)."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class SpecError(ReidriskError, ValueError):
    """A survey definition that cannot be used (HTTP 422)."""


@dataclass(frozen=True)
class SurveySpec:
    """Everything a client needs to randomize and the server needs to validate and fit.

    Usually made by ``build`` (from the survey's definition) or ``from_dict`` (from the stored
    client configuration) rather than directly.

    Parameters
    ----------
    schema : Schema
        The survey's attributes and their domains.
    protocol : Protocol
        How clients report: whole-record budget, attributes per person, mechanism (the budget
        split).
    mechanisms : tuple of Mechanism
        One per attribute of ``schema``, in schema order, at the protocol's per-attribute budget
        (``epsilon / k``).
    codecs : tuple of str
        Each attribute's cell codec in the reports file (``reports_io.codec_of``), in schema
        order.
    """

    schema: Schema
    protocol: Protocol
    mechanisms: tuple[Mechanism, ...]
    codecs: tuple[str, ...]
    _names: tuple = field(default=(), init=False, repr=False, compare=False)
    _name_set: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    _sets: tuple = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_names", tuple(self.schema.names))
        object.__setattr__(self, "_name_set", frozenset(self._names))
        object.__setattr__(self, "_sets", tuple(
            c == "bits" or m.name in SET_MECHANISMS for m, c in zip(self.mechanisms, self.codecs)))

    @classmethod
    def build(cls, schema: dict, protocol: dict) -> SurveySpec:
        """A spec from the survey's definition: a schema dict and the protocol's fields.

        Each attribute's mechanism must be a frequency oracle the server's estimators handle
        (grr, subset, oue, rappor, olh or negative).

        Parameters
        ----------
        schema : dict
            The schema as ``Schema.to_dict`` writes it.
        protocol : dict
            The protocol's fields: ``epsilon`` (required), ``attributes_per_person`` (or its
            former name ``k``), ``mechanism``, ``among``, ``mechanism_options``; ``format`` and
            ``version`` keys are ignored (a ``Protocol.to_dict`` may be passed as is).

        Returns
        -------
        SurveySpec
            The spec, with one mechanism and one cell codec per attribute.

        Raises
        ------
        SpecError
            For a bad schema, an unknown or missing protocol field, a protocol the mechanisms
            reject, or a mechanism that is not a frequency oracle.
        """
        try:
            sch = Schema.from_dict(schema)
        except (SchemaError, KeyError, TypeError) as exc:
            raise SpecError(f"bad schema: {exc}") from None
        fields = {k: v for k, v in dict(protocol).items() if k not in ("format", "version")}
        if "k" in fields and "attributes_per_person" not in fields:  # the field's former name
            fields["attributes_per_person"] = fields.pop("k")
        unknown = sorted(set(fields) - {"epsilon", "attributes_per_person", "mechanism", "among",
                                        "mechanism_options"})
        if unknown:
            raise SpecError(f"unknown protocol field(s) {unknown}; expected epsilon, "
                            "attributes_per_person, mechanism, among, mechanism_options")
        if "epsilon" not in fields:
            raise SpecError("the protocol needs 'epsilon', the budget of one person's whole report")
        try:
            proto = Protocol(**fields)
            mechs = proto.mechanisms(sch)
            for a, m in zip(sch, mechs):
                try:
                    variance_factor(m)
                except Exception:
                    raise SpecError(
                        f"attribute {a.name!r}: mechanism {m.name!r} is not a frequency oracle; "
                        "the server's estimators need grr, subset, oue, rappor, olh or negative"
                    ) from None
        except (MechanismError, TypeError) as exc:
            raise SpecError(f"bad protocol: {exc}") from None
        return cls(sch, proto, tuple(mechs), tuple(codec_of(m) for m in mechs))

    def to_dict(self) -> dict:
        """The client configuration (also what the database stores).

        Returns
        -------
        dict
            JSON-ready: ``format``, ``version``, ``schema`` (``Schema.to_dict``), ``protocol``
            (``Protocol.to_dict``) and ``attributes``, one ``{"name", "codec", "mechanism"}``
            entry per attribute in schema order (``mechanism``: the mechanism's parameters).
        """
        return {
            "format": SPEC_FORMAT,
            "version": SPEC_VERSION,
            "schema": self.schema.to_dict(),
            "protocol": self.protocol.to_dict(),
            "attributes": [
                {"name": a.name, "codec": c, "mechanism": jsonable(m.params())}
                for a, m, c in zip(self.schema, self.mechanisms, self.codecs)
            ],
        }

    @classmethod
    def from_dict(cls, d: dict) -> SurveySpec:
        """Rebuild a spec from the client configuration that ``to_dict`` writes.

        The mechanisms come from the reports file's mechanism rebuilder
        (``reports_io.rebuild_mechanism``), so a client and the server hold exactly the
        mechanisms the configuration describes.

        Parameters
        ----------
        d : dict
            The configuration, as ``to_dict`` writes it.

        Returns
        -------
        SurveySpec
            The spec the configuration describes.

        Raises
        ------
        SpecError
            When ``d`` is not a configuration of this format and version.
        """
        if d.get("format") != SPEC_FORMAT or d.get("version") != SPEC_VERSION:
            raise SpecError(f"not a {SPEC_FORMAT} version {SPEC_VERSION} configuration")
        schema = Schema.from_dict(d["schema"])
        protocol = Protocol.from_dict(d["protocol"])
        mechs, codecs = [], []
        for a, entry in zip(schema, d["attributes"]):
            mechs.append(rebuild_mechanism(a.name, a.size, entry["mechanism"]))
            codecs.append(entry["codec"])
        return cls(schema, protocol, tuple(mechs), tuple(codecs))

    def to_json(self) -> str:
        """The client configuration (``to_dict``) as JSON text.

        Returns
        -------
        str
            The configuration, keys sorted (the same spec always gives the same text).
        """
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SurveySpec:
        """Rebuild a spec from the JSON text that ``to_json`` writes.

        Parameters
        ----------
        text : str
            The configuration as JSON.

        Returns
        -------
        SurveySpec
            The spec the configuration describes (``from_dict``).
        """
        return cls.from_dict(json.loads(text))

    def guess_bounds(self) -> tuple[float, ...]:
        """For each attribute, the most often anyone can guess a person's true answer from their
        sent (randomized) answer, when the attribute's answers are equally likely a priori.

        Under epsilon-local differential privacy with per-attribute budget ``e`` over ``k``
        categories, the best guess from a report is right with probability at most
        ``exp(e) / (exp(e) + k - 1)`` (each report is at most ``exp(e)`` times likelier under one
        answer than under any other); randomized response (``grr``) attains it.

        Returns
        -------
        tuple of float
            One bound in (1/k, 1] per attribute, in schema order.
        """
        out = []
        for a, m in zip(self.schema, self.mechanisms):
            e, k = float(m.epsilon), int(a.size)
            out.append(1.0 / (1.0 + (k - 1) * math.exp(-e)))
        return tuple(out)

    # ---- reports -----------------------------------------------------------------------------
    def cells_of(self, values: dict, index: int) -> list:
        """One wire report's ``values`` as cells in schema order.

        Only the shape of each cell is checked here (a string of ``|``-separated category
        codes, or ``"{}"``, for every codec but ``"float"``); ``decode`` checks the codes
        against the mechanisms.

        Parameters
        ----------
        values : dict
            The report's ``values``: attribute name to its randomized cell (a string), absent
            or ``None`` when missing.
        index : int
            The report's position in its batch, named in errors.

        Returns
        -------
        list of str or None
            One cell per attribute in schema order, ``None`` where missing, in its one canonical
            spelling (``canonical_cell``: what the server stores, so that the stored cells do not
            tell clients apart).

        Raises
        ------
        ReportError
            When ``values`` is not a dict, names an attribute the survey does not have, holds
            a cell that is not a string of codes (a raw answer or label is never accepted), or
            holds no cell at all (``{}`` or every value null: an empty report is refused).
        """
        if not isinstance(values, dict):
            raise ReportError(f"report {index}: 'values' must be an object mapping attribute "
                              "names to randomized report cells", index)
        if not self._name_set.issuperset(values):
            unknown = [k for k in values if k not in self._name_set]
            raise ReportError(
                f"report {index}: unknown attribute {unknown[0]!r}; this survey's attributes are "
                f"{list(self._names)}", index)
        row: list[str | None] = []
        for a, codec, is_set in zip(self._names, self.codecs, self._sets):
            v = values.get(a)
            if v is None:
                row.append(None)
                continue
            if not isinstance(v, str):
                raise ReportError(
                    f"report {index}: attribute {a!r}: cell {v!r} must be a string in the reports "
                    f"cell format (e.g. '3|7|9'), or null when missing", index)
            v = v.strip()
            if codec != "float" and not _CODES.match(v):
                raise ReportError(
                    f"report {index}: attribute {a!r}: cell {v[:40]!r} is not a randomized report "
                    "(expected category indices produced by the client's randomizer, separated by "
                    "'|'; a raw answer or label is never accepted)", index)
            row.append(v if codec == "float" else canonical_cell(v, is_set))
        if all(v is None for v in row):
            raise ReportError(
                f"report {index} holds no answer (every attribute is missing); send a report only "
                "for a person who answered at least one question", index)
        return row

    def canonical_row(self, row: list) -> list:
        """A stored row of cells (perhaps from before canonical storage) in canonical spelling.

        Parameters
        ----------
        row : list of str or None
            Cells in schema order, ``None`` = missing.

        Returns
        -------
        list of str or None
            The row with each cell as ``canonical_cell`` spells it (float cells unchanged).
        """
        return [v if v is None or codec == "float" else canonical_cell(v, is_set)
                for v, codec, is_set in zip(row, self.codecs, self._sets)]

    def decode(self, rows: list[list]) -> RecordReports:
        """Validated ``RecordReports`` from cell rows of ``cells_of``.

        Each column goes through the reports file's own decoder (``reports_io.decode_column``,
        which reads the canonical cells ``cells_of`` passes with a few NumPy passes and names
        the first bad cell), then each mechanism's ``validate_reports`` and the protocol's
        ``check_reports`` run on every report.

        Parameters
        ----------
        rows : list of list
            One row per report, each as ``cells_of`` returns it (cells in schema order,
            ``None`` = missing).

        Returns
        -------
        RecordReports
            The reports, one per row, under the survey's schema and mechanisms.

        Raises
        ------
        ReportError
            Naming the report (its ``index`` set when known), attribute and problem, for a cell
            the decoder or a mechanism rejects or a report the protocol forbids.
        """
        n = len(rows)
        cols = list(zip(*rows)) if rows else [()] * len(self.schema)
        reps = []
        for a, m, codec, col in zip(self.schema, self.mechanisms, self.codecs, cols):
            try:
                cells = np.fromiter(col, dtype=object, count=n)
                reps.append(m.validate_reports(decode_column(_ORIGIN, a.name, m, codec, cells)))
            except (ReportsFileError, MechanismError) as exc:
                raise ReportError(_reword(str(exc), a.name), _row_of(str(exc))) from None
        rr = RecordReports(self.schema, self.mechanisms, tuple(reps))
        try:
            self.protocol.check_reports(rr)
        except ProtocolError as exc:
            raise ReportError(_reword(str(exc), ""), _row_of(str(exc))) from None
        return rr

    def collected(self, rr: RecordReports) -> CollectedReports:
        """The reports as the server receives them, under this survey's protocol.

        Parameters
        ----------
        rr : RecordReports
            Reports of this survey (from ``decode``).

        Returns
        -------
        CollectedReports
            ``rr`` with the survey's protocol.
        """
        return CollectedReports(rr, self.protocol)

    def canonical_cells(self, rr: RecordReports) -> list[list]:
        """The cells ``write_reports`` would write for these reports.

        Parameters
        ----------
        rr : RecordReports
            Reports of this survey.

        Returns
        -------
        list of list
            One row per report, one cell (str) per attribute in schema order, ``None`` where
            missing.
        """
        frame = reports_frame(rr)
        return frame.astype(object).where(frame.notna(), None).values.tolist()


def _row_of(message: str) -> int | None:
    m = re.search(r"row (\d+)", message)
    return int(m.group(1)) if m else None


def _reword(message: str, attribute: str) -> str:
    """The decoder speaks of files and rows; on the wire a row is a report of the batch."""
    message = message.removeprefix(f"{_ORIGIN.name}: ")
    message = re.sub(r"\brow (\d+)", r"report \1", message)
    if attribute and attribute not in message:
        message = f"attribute {attribute!r}: {message}"
    return message


def parse_report_id(value, index: int) -> str:
    """The client-generated UUID of a report, in canonical form.

    Parameters
    ----------
    value : object
        The report's ``id`` as received; anything whose string form is a UUID.
    index : int
        The report's position in its batch, named in the error.

    Returns
    -------
    str
        The UUID in canonical form (lower case, hyphenated).

    Raises
    ------
    ReportError
        When ``value`` is not a UUID.
    """
    try:
        return str(uuid.UUID(str(value)))
    except (ValueError, TypeError, AttributeError):
        raise ReportError(f"report {index}: 'id' must be a UUID generated by the client, got "
                          f"{str(value)[:40]!r}", index) from None
