"""The reports file: randomized reports with missing values, as CSV or Parquet plus metadata.

Layout
------
One row per person, one column per attribute (schema order, named by the attribute), each cell the
attribute's *randomized* report, or an empty cell (CSV) / null (Parquet) where the person sent
nothing (missing, or not sampled by the protocol). Cells are text:

==========  ==========================================  =======================================
codec       mechanisms                                   cell
==========  ==========================================  =======================================
``int``     grr, negative (one code)                     ``"3"``
``ints``    subset (the h codes), glh/olh (hash, value)  ``"3|7|9"`` (fixed width)
``bits``    oue, rappor (bit vectors)                    indices of the 1-bits: ``"0|4"``;
                                                         ``"{}"`` when no bit is set
``float``   laplace_index                                17 significant digits (exact round trip)
==========  ==========================================  =======================================

Codes are category *indices* (declared order), never labels. The metadata (format name, version,
schema, protocol, every attribute's mechanism parameters and codec, and ``privacy_loss``: the
largest privacy loss of one person's report, ``RecordReports.privacy_loss``) is JSON, stored in the
Parquet file's key-value metadata under ``reidrisk.reports`` and, for CSV, in a sidecar file
``<reports file>.meta.json``. Both formats are row-oriented: a client batch can be appended as rows.

Loading validates everything at the boundary (``read_reports``): the metadata must be present (a
file without it is refused: raw data is never accepted where randomized reports are expected), the
columns must match the schema, every cell must parse with its codec, every report must be one the
mechanism can produce (codes in the domain, right set size, no repeats: ``validate_reports``) and
the batch must follow its protocol (budget per attribute, at most k attributes per person). The
declared ``privacy_loss`` is recomputed from the mechanisms and the reports: a file that declares
less than they imply is refused; a file without it (written before it existed) or one declaring
more (older files stated the sum of every attribute's budget) gets the recomputed value.

Partitions. A batch too large for memory is a directory (or fsspec URL) of Parquet files of this
layout, each carrying the metadata (``reidrisk.collect.partitioned.write_partitioned``). They are
read here one row group chunk at a time (``partitions``, ``read_partition_header``, ``describe``,
``iter_partition``, ``iter_reports``; ``read_reports`` of a directory concatenates the chunks), so
that counting (``reidrisk.collect.counts``) and fitting stand on this module and not the reverse.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk.collect.protocol import Protocol, ProtocolError, resolve_mechanism
from reidrisk.data.chunks import filesystem, is_url
from reidrisk.data.io import atomic_write, atomic_write_files, read_table
from reidrisk.mechanisms.base import Mechanism, MechanismError
from reidrisk.mechanisms.oue import PackedBits, UnaryEncoding, packed_width
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Schema, SchemaError

REPORTS_FORMAT = "reidrisk-reports"
REPORTS_VERSION = 1
PARQUET_KEY = b"reidrisk.reports"
SIDECAR_SUFFIX = ".meta.json"
EMPTY_SET = "{}"
CODECS = ("int", "ints", "bits", "float")


class ReportsFileError(MechanismError):
    """A reports file that cannot be read as randomized reports. The message names file/column/row."""


@dataclass(frozen=True)
class CollectedReports:
    """Reports as the server receives them: the per-attribute reports and the protocol they follow.

    Parameters
    ----------
    reports : RecordReports
        The per-attribute reports.
    protocol : Protocol
        The protocol they follow.
    """

    reports: RecordReports
    protocol: Protocol

    @property
    def schema(self) -> Schema:
        """The reports' attributes (``reports.schema``)."""
        return self.reports.schema

    @property
    def n(self) -> int:
        """The number of reports (people), missing attributes included."""
        return self.reports.n

    @property
    def privacy_loss(self) -> float:
        """The guarantee of these reports: the largest privacy loss of one person's report.

        From each attribute's channel and which attributes each person reported
        (``RecordReports.privacy_loss``); at most the protocol's ``epsilon``.
        """
        return self.reports.privacy_loss

    @property
    def epsilon(self) -> float:
        """The budget one person's whole report spends: ``privacy_loss``."""
        return self.privacy_loss

    @property
    def budget(self) -> float:
        """The whole-record budget the protocol declares (``protocol.epsilon``).

        What clients were told to spend: an upper bound of ``privacy_loss``.
        """
        return self.protocol.epsilon

    def validate(self) -> CollectedReports:
        """Check every report against its mechanism and the batch against the protocol.

        Returns
        -------
        CollectedReports
            ``self``, unchanged, so that a check can be chained.

        Raises
        ------
        MechanismError
            For a report its mechanism cannot produce, or (``ProtocolError``) a batch that breaks
            the protocol.
        """
        self.reports.validate()
        self.protocol.check_reports(self.reports)
        return self


def sidecar_path(path: str | Path) -> Path:
    """Where the metadata of a CSV reports file lives: ``<path>.meta.json``.

    Parameters
    ----------
    path : str or Path
        The reports file.

    Returns
    -------
    Path
        The sidecar's path, beside ``path`` (whether or not it exists).
    """
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _is_parquet(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        return True
    if name.endswith((".csv", ".csv.gz", ".tsv")):
        return False
    raise ReportsFileError(
        f"{str(path)!r}: a reports file must end in .csv, .csv.gz, .tsv, .parquet or .pq"
    )


def codec_of(mech: Mechanism) -> str:
    """The cell codec of a mechanism's reports (module doc), from a sample report.

    Parameters
    ----------
    mech : Mechanism
        The mechanism.

    Returns
    -------
    str
        One of ``CODECS``: ``"bits"`` for a unary encoding, ``"float"`` or ``"int"`` for one
        number a report, ``"ints"`` for several codes a report.
    """

    if isinstance(mech, UnaryEncoding):
        return "bits"
    sample = np.asarray(mech.perturb(np.zeros(1, dtype=np.int64), rng=0))
    if sample.ndim == 1:
        return "float" if np.issubdtype(sample.dtype, np.floating) else "int"
    return "ints"


_MISSING_ROW: dict[int, tuple[Mechanism, np.ndarray]] = {}


def _missing_rows(mech: Mechanism, n: int) -> np.ndarray:
    """``n`` missing reports of ``mech``: one, repeated (every missing report is the same). The
    one is kept per mechanism object (with the object, so that its id is not reused), as the
    service decodes a few hundred reports at a time."""
    hit = _MISSING_ROW.get(id(mech))
    if hit is None or hit[0] is not mech:
        if len(_MISSING_ROW) >= 256:
            _MISSING_ROW.clear()
        hit = (mech, np.asarray(mech.perturb(np.full(1, MISSING, dtype=np.int64), rng=0)))
        _MISSING_ROW[id(mech)] = hit
    return np.repeat(hit[1], n, axis=0)


# ---------------------------------------------------------------------------------------------
# encode
# ---------------------------------------------------------------------------------------------
def _encode_column(mech: Mechanism, codec: str, rep: np.ndarray) -> np.ndarray:
    """Object array (n,) of cell strings, None where the report is missing."""
    rep = np.asarray(rep)
    miss = np.asarray(mech.is_missing(rep), dtype=bool)
    n = rep.shape[0]
    out = np.empty(n, dtype=object)
    if codec == "int":
        s = rep.astype(np.int64).astype(str)
    elif codec == "float":
        # 17 significant digits round-trip every float64 exactly
        s = np.char.mod("%.17g", np.where(miss, 0.0, rep.astype(np.float64))).astype(object)
    elif codec == "ints":
        cols = rep.astype(np.int64).astype(str)
        s = cols[:, 0].astype(object)
        for c in range(1, cols.shape[1]):
            s = s + "|" + cols[:, c].astype(object)
    elif codec == "bits":
        bits = rep == 1
        s = np.full(n, "", dtype=object)
        for v in range(bits.shape[1]):  # loop over the k values, vectorized over rows
            s = s + np.where(bits[:, v], f"{v}|", "").astype(object)
        s = pd.Series(s, dtype=object).str[:-1].replace("", EMPTY_SET).to_numpy(dtype=object)
    else:  # pragma: no cover - guarded by codec_of
        raise ReportsFileError(f"unknown codec {codec!r}")
    out[:] = s
    out[miss] = None
    return out


def reports_frame(reports: RecordReports) -> pd.DataFrame:
    """The reports as a DataFrame of cell strings (module doc), one column per attribute.

    Parameters
    ----------
    reports : RecordReports
        The reports to encode.

    Returns
    -------
    pandas.DataFrame
        One row per report, one object column per attribute named by it (schema order); each
        cell a string in its codec's format, ``None`` where the report is missing.
    """
    data = {}
    for attr, mech, rep in zip(reports.schema, reports.mechanisms, reports.reports):
        data[attr.name] = _encode_column(mech, codec_of(mech), rep)
    return pd.DataFrame(data)


def reports_metadata(reports: RecordReports, protocol: Protocol) -> dict:
    """The metadata that describes a batch of reports in its file (module doc).

    Parameters
    ----------
    reports : RecordReports
        The reports.
    protocol : Protocol
        The protocol they follow.

    Returns
    -------
    dict
        JSON-ready: ``format``, ``version``, ``n`` (reports), ``privacy_loss`` (the largest
        loss of one person's report, ``RecordReports.privacy_loss``), ``schema``, ``protocol``
        and ``attributes``, one ``{"name", "codec", "mechanism"}`` entry per attribute
        (``mechanism``: its ``params()``).
    """
    return _metadata(reports.schema, reports.mechanisms, protocol, reports.n, reports.privacy_loss)


def _metadata(schema: Schema, mechanisms, protocol: Protocol, n: int, privacy_loss: float) -> dict:
    return {
        "format": REPORTS_FORMAT,
        "version": REPORTS_VERSION,
        "n": int(n),
        "privacy_loss": float(privacy_loss),
        "schema": schema.to_dict(),
        "protocol": protocol.to_dict(),
        "attributes": [
            {"name": a.name, "codec": codec_of(m), "mechanism": jsonable(m.params())}
            for a, m in zip(schema, mechanisms)
        ],
    }


def jsonable(obj):
    """``obj`` with NumPy scalars and arrays as plain JSON values.

    Parameters
    ----------
    obj
        A mechanism's ``params()`` (nested dicts, lists, NumPy values).

    Returns
    -------
    object
        The same structure with dict keys as strings, tuples and arrays as lists and NumPy
        scalars as Python numbers; any other value as it is.
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def write_reports(path: str | Path, reports: RecordReports | CollectedReports,
                  protocol: Protocol | None = None) -> Path:
    """Write reports to ``path`` (.csv/.csv.gz/.tsv with a sidecar, or .parquet/.pq), atomically.

    The batch is validated against the protocol before anything is written.

    Parameters
    ----------
    path : str or Path
        The target; the suffix chooses the format (.csv/.csv.gz/.tsv with a sidecar
        ``<path>.meta.json``, or .parquet/.pq with the metadata inside).
    reports : RecordReports or CollectedReports
        The reports to write.
    protocol : Protocol, optional
        The protocol the reports follow; required with a ``RecordReports`` (a
        ``CollectedReports``'s own is used when not given).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ReportsFileError
        Without a protocol, or for a suffix that is neither CSV nor Parquet.
    ProtocolError
        When the batch breaks the protocol (nothing is written).
    """
    path = Path(path)
    if isinstance(reports, CollectedReports):
        protocol = reports.protocol if protocol is None else protocol
        reports = reports.reports
    if protocol is None:
        raise ReportsFileError("write_reports needs the protocol the reports follow")
    protocol.check_reports(reports)
    frame = reports_frame(reports)
    meta = reports_metadata(reports, protocol)
    text = json.dumps(meta, indent=1)
    if _is_parquet(path):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame.astype("string"), preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               PARQUET_KEY: text.encode()})
        atomic_write(path, lambda tmp: pq.write_table(table, tmp))
    else:
        sep = "\t" if path.name.lower().endswith(".tsv") else ","
        comp = "gzip" if path.name.lower().endswith(".gz") else None
        # the table and its sidecar are moved into place only once both are written: a failed
        # write must not leave the old reports beside new metadata (read as the new mechanism)
        atomic_write_files([
            (path, lambda tmp: frame.to_csv(tmp, index=False, sep=sep, compression=comp)),
            (sidecar_path(path), lambda tmp: tmp.write_text(text)),
        ])
    return path


PARTITION_ROW_GROUP = 1 << 16
"""Rows per Parquet row group in a partition file: the unit a chunked reader loads at once."""


def _native_column(mech: Mechanism, codec: str, rep):
    """One attribute's reports as an Arrow array in the ``native`` layout (``write_partition``)."""
    import pyarrow as pa

    if isinstance(rep, PackedBits) or (codec == "bits" and isinstance(mech, UnaryEncoding)):
        if isinstance(rep, PackedBits):
            packed = rep
        else:
            assert isinstance(mech, UnaryEncoding)  # the condition above
            packed = mech.pack(rep)
        n, width = packed.bits.shape
        valid = pa.py_buffer(np.packbits(~packed.missing, bitorder="little"))
        data = pa.py_buffer(np.ascontiguousarray(packed.bits))
        return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [valid, data])
    rep = np.asarray(rep)
    miss = np.asarray(mech.is_missing(rep), dtype=bool)
    if codec == "int":
        return pa.array(rep.astype(np.int64), mask=miss)
    if codec == "float":
        return pa.array(rep.astype(np.float64), mask=miss)
    return pa.array(_encode_column(mech, codec, rep), type=pa.string())


def write_partition(path: str | Path, schema: Schema, mechanisms, columns, protocol: Protocol, *,
                    filesystem=None, row_group_rows: int = PARTITION_ROW_GROUP,
                    check_rows: int = PARTITION_ROW_GROUP) -> str:
    """Write one Parquet partition of reports in the compact ``native`` layout.

    Cells are stored as Parquet numbers (``int``/``float`` codecs), as fixed-size binaries of
    ``np.packbits`` of the bits (``bits``: 8 bits a byte, ceil(k/8) bytes a report, never unpacked
    whole) or as text (``ints``), null where missing; ``read_reports`` and the chunked reader
    (``reidrisk.collect.partitioned``) decode them with ``decode_column``. The metadata (module
    doc) is stored in the file, so each partition describes itself. The batch is checked against
    the protocol ``check_rows`` rows at a time (packed columns unpacked a chunk at a time).

    Parameters
    ----------
    path : str or Path
        The partition's path (on ``filesystem``).
    schema : Schema
        The attributes.
    mechanisms : sequence of Mechanism
        One per attribute.
    columns : sequence of numpy.ndarray or PackedBits
        One report array per attribute (schema order), or a ``PackedBits`` for a unary encoding.
    protocol : Protocol
        The protocol the reports follow.
    filesystem : pyarrow.fs.FileSystem, optional
        Where to write (default: local, written atomically).
    row_group_rows : int
        Rows of one Parquet row group.
    check_rows : int
        Rows checked against the protocol at a time.

    Returns
    -------
    str
        The partition's path.

    Raises
    ------
    ReportsFileError
        Without one mechanism and one column per attribute, or for columns of different lengths.
    ProtocolError
        When the batch breaks the protocol (nothing is written).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    mechs = tuple(mechanisms)
    cols = list(columns)
    if not (len(schema) == len(mechs) == len(cols)):
        raise ReportsFileError("write_partition needs one mechanism and one column per attribute")
    ns = {len(c) for c in cols}
    if len(ns) != 1:
        raise ReportsFileError(f"report columns have different lengths {sorted(ns)}")
    n = ns.pop()
    loss = 0.0
    for s in range(0, n, check_rows):
        part = tuple(c.unpack(s, s + check_rows) if isinstance(c, PackedBits)
                     else np.asarray(c)[s:s + check_rows] for c in cols)
        chunk = RecordReports(schema, mechs, part)
        protocol.check_reports(chunk)
        loss = max(loss, chunk.privacy_loss)
    meta = _metadata(schema, mechs, protocol, n, loss)
    arrays = [_native_column(m, codec_of(m), c) for m, c in zip(mechs, cols)]
    table = pa.Table.from_arrays(arrays, names=schema.names)
    table = table.replace_schema_metadata({PARQUET_KEY: json.dumps(meta, indent=1).encode()})
    if filesystem is None:
        atomic_write(Path(path), lambda tmp: pq.write_table(table, tmp,
                                                            row_group_size=row_group_rows))
    else:
        pq.write_table(table, str(path), filesystem=filesystem, row_group_size=row_group_rows)
    return str(path)


# ---------------------------------------------------------------------------------------------
# decode
# ---------------------------------------------------------------------------------------------
def _read_metadata(path: Path) -> tuple[dict, pd.DataFrame | None]:
    if _is_parquet(path):
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:
            raise ReportsFileError(f"{str(path)!r} is not a readable Parquet file: {exc}") from None
        raw = (table.schema.metadata or {}).get(PARQUET_KEY)
        frame = table.to_pandas()
        if raw is None:
            side = sidecar_path(path)
            if not side.is_file():
                raise _no_metadata(path)
            raw = side.read_bytes()
        return _parse_meta(path, raw), frame
    side = sidecar_path(path)
    if not side.is_file():
        raise _no_metadata(path)
    return _parse_meta(path, side.read_bytes()), None


def _no_metadata(path: Path) -> ReportsFileError:
    return ReportsFileError(
        f"{str(path)!r} carries no reidrisk reports metadata (expected {sidecar_path(path).name!r} "
        "beside a CSV, or metadata inside a Parquet file). Only randomized reports are accepted: "
        "randomize raw data first (`reidrisk collect simulate`, or a client that writes the metadata)"
    )


def _parse_meta(path: Path, raw: bytes) -> dict:
    try:
        meta = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportsFileError(f"the metadata of {str(path)!r} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != REPORTS_FORMAT:
        raise ReportsFileError(
            f"the metadata of {str(path)!r} is not a reidrisk reports description "
            f"('format' must be {REPORTS_FORMAT!r})"
        )
    if meta.get("version") != REPORTS_VERSION:
        raise ReportsFileError(
            f"{str(path)!r}: reports format version {meta.get('version')!r} is not supported "
            f"(this reidrisk reads version {REPORTS_VERSION})"
        )
    for key in ("schema", "protocol", "attributes"):
        if key not in meta:
            raise ReportsFileError(f"the metadata of {str(path)!r} lacks {key!r}")
    return meta


def _constructor_kwargs(params: dict) -> dict:
    """Constructor arguments from ``Mechanism.params()`` extras. Local hashing describes its hash
    family as ``hash`` ("linear" with ``prime``, or "tables" with ``m`` and ``tables``)."""
    kw = dict(params)
    kind = kw.pop("hash", None)
    if kind == "tables":
        kw.pop("m", None)
        kw["tables"] = np.asarray(kw["tables"], dtype=np.int64)
        kw.pop("prime", None)
    return kw


def rebuild_mechanism(attr_name: str, f: int, params: dict) -> Mechanism:
    """The mechanism of an attribute, rebuilt from its saved ``params``.

    Parameters
    ----------
    attr_name : str
        The attribute, for error messages.
    f : int
        Its domain size.
    params : dict
        The mechanism's saved ``params()`` (``mechanism``, ``epsilon``, ``k`` and the
        mechanism's own extras).

    Returns
    -------
    Mechanism
        The mechanism, whose ``params()`` are exactly ``params``.

    Raises
    ------
    ReportsFileError
        When a key is missing, ``k`` is not ``f``, or the parameters do not describe a valid
        mechanism of that name.
    """
    params = dict(params)
    try:
        name = params.pop("mechanism")
        eps = params.pop("epsilon")
        k = params.pop("k")
    except KeyError as exc:
        raise ReportsFileError(
            f"attribute {attr_name!r}: mechanism parameters lack {exc.args[0]!r}") from None
    if k != f:
        raise ReportsFileError(
            f"attribute {attr_name!r}: the mechanism has k={k} but the schema declares {f} categories"
        )
    try:
        mech = resolve_mechanism(name, eps, k, **_constructor_kwargs(params))
    except (TypeError, ValueError) as exc:
        raise ReportsFileError(
            f"attribute {attr_name!r}: cannot rebuild the {name!r} mechanism from {params}: {exc}"
        ) from None
    if jsonable(mech.params()) != jsonable({"mechanism": name, "epsilon": eps, "k": k, **params}):
        raise ReportsFileError(
            f"attribute {attr_name!r}: mechanism parameters {params} do not describe a valid "
            f"{name!r} mechanism at epsilon={eps:g} (rebuilt: {mech.params()})"
        )
    return mech


def decode_column(path: Path, attr_name: str, mech: Mechanism, codec: str,
                  cells: pd.Series | np.ndarray) -> np.ndarray:
    """One attribute's report cells as ``mech``'s report array.

    The one decoder of report cells, used by the reports file, the partitions and the service.
    Cells as ``write_reports`` writes them (codes of at most 18 digits separated by ``|``, or
    ``{}``) are split by ``_split_canonical`` with a few passes over the column's joined bytes
    (no work per cell in Python); any other column (whitespace, signs, decimals, labels, ...)
    goes through pandas cell by cell (``_split_lenient``), which accepts what it always accepted
    and names the first bad cell. The checks of the number of codes, the bit range and repeated
    bits, and their messages, are the same for both.

    Parameters
    ----------
    path : Path
        The source, named in errors.
    attr_name : str
        The attribute, named in errors.
    mech : Mechanism
        The attribute's mechanism.
    codec : str
        The cells' codec (module doc).
    cells : pandas.Series or numpy.ndarray
        The cells; missing ones are null (``None``, NaN or ``pd.NA``).

    Returns
    -------
    numpy.ndarray
        ``mech``'s reports, one per cell: (n,) for the ``int`` and ``float`` codecs, (n, width)
        for ``ints``, (n, k) bits for ``bits``; a missing cell gives ``mech``'s missing report.
        Only the syntax is checked here, not that ``mech`` can produce the reports
        (``validate_reports``).

    Raises
    ------
    ReportsFileError
        Naming the source, column, row and cell of the first cell that does not parse, holds the
        wrong number of codes, names a bit outside 0..k-1 or repeats one; or an unknown codec.
    """
    if isinstance(cells, pd.Series) and codec in ("int", "float") \
            and pd.api.types.is_numeric_dtype(cells.dtype):
        miss = cells.isna().to_numpy()
        present_idx = np.flatnonzero(~miss)
        out = _missing_rows(mech, len(cells))
        if present_idx.size == 0:
            return out
        return _decode_native(path, attr_name, codec, cells, out, present_idx)
    values = (cells.to_numpy(dtype=object) if isinstance(cells, pd.Series)
              else np.asarray(cells, dtype=object))
    n = len(values)
    miss = np.asarray(pd.isna(values), dtype=bool)
    out = _missing_rows(mech, n)
    present_idx = np.flatnonzero(~miss)
    if present_idx.size == 0:
        return out
    if codec == "bits" and isinstance(values[present_idx[0]], (bytes, bytearray)):
        return _decode_packed(path, attr_name, pd.Series(values, dtype=object), out, present_idx)
    present = values[present_idx]
    split = (_split_canonical(present, codec == "bits") if codec in ("int", "ints", "bits")
             else None)
    shown = present  # what a message quotes: the cells, stripped when they went through pandas
    if split is None:
        text = pd.Series(present, dtype=object).astype(str).str.strip()
        shown = text.to_numpy(dtype=object)

    def bad_cell(pos: int, why: str) -> ReportsFileError:
        row = int(present_idx[pos])
        return ReportsFileError(
            f"{path.name}: column {attr_name!r}, row {row}: cell {shown[pos]!r} {why}"
        )

    if codec in ("int", "ints", "bits"):
        lens, vals = split if split is not None else _split_lenient(text, codec, bad_cell)
        if codec == "int":
            if (lens != 1).any():
                raise bad_cell(int(np.flatnonzero(lens != 1)[0]), "must hold exactly one code")
            out = np.asarray(out).copy()
            out[present_idx] = vals
            return out
        if codec == "ints":
            width = out.shape[1]
            if (lens != width).any():
                pos = int(np.flatnonzero(lens != width)[0])
                raise bad_cell(pos, f"holds {lens[pos]} values; this mechanism's reports hold "
                                    f"exactly {width} ({mech!r})")
            out = np.asarray(out).copy()
            out[present_idx] = vals.reshape(-1, width).astype(out.dtype)
            return out
        # bits
        k = out.shape[1]
        if vals.size and (vals.min() < 0 or vals.max() >= k):
            bad = int(np.flatnonzero((vals < 0) | (vals >= k))[0])
            pos = int(np.searchsorted(np.cumsum(lens), bad, side="right"))
            raise bad_cell(pos, f"names a bit outside 0..{k - 1}")
        rows = np.repeat(np.arange(present_idx.size), lens)
        block = np.zeros((present_idx.size, k), dtype=out.dtype)
        block[rows, vals] = 1
        if (block.sum(axis=1) != lens).any():
            raise bad_cell(int(np.flatnonzero(block.sum(axis=1) != lens)[0]), "repeats a bit index")
        out = np.asarray(out).copy()
        out[present_idx] = block
        return out
    if codec == "float":
        try:  # numpy's str -> float64 conversion is correctly rounded (exact round trip)
            nums = text.to_numpy(dtype=str).astype(np.float64)
        except ValueError:
            bad = pd.to_numeric(text, errors="coerce").isna().to_numpy()
            raise bad_cell(int(np.flatnonzero(bad)[0]), "is not a number") from None
        if np.isnan(nums).any():
            raise bad_cell(int(np.flatnonzero(np.isnan(nums))[0]), "is not a number")
        out = np.asarray(out, dtype=np.float64).copy()
        out[present_idx] = nums
        return out
    raise ReportsFileError(f"{path.name}: column {attr_name!r} has unknown codec {codec!r}; "
                           f"expected one of {CODECS}")


MAX_CODE_DIGITS = 18
"""Longest code the fast split reads: 10^18 - 1 < 2^63, so every such code is an exact int64
(local hashing's hash parameters have 10 digits). Longer codes go through pandas."""

_CODE_BYTES = b"0123456789|,"
_SPACES = bytes.maketrans(b"|,", b"  ")
_COMMA, _PIPE = ord(","), ord("|")


def _split_canonical(cells: np.ndarray, bits: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """(codes per cell, all codes in order) of cells in the canonical syntax, or None when a cell
    is not in it and pandas must read the column (``_split_lenient``).

    Canonical: a cell is codes of 1 to ``MAX_CODE_DIGITS`` ASCII digits separated by single
    ``|`` (leading zeros allowed), or, for ``bits``, exactly ``{}`` (no code). The other cells are
    joined by commas into one byte string (a cell holding a comma is not canonical: the count of
    commas tells) and checked with bytes methods (the alphabet; no empty code: no ``||``, ``,,``,
    ``|,``, ``,|`` nor a separator at either end) and NumPy (the longest run of digits); the
    codes are then one ``np.fromstring`` and the codes per cell the gaps between its commas.

    Parameters
    ----------
    cells : numpy.ndarray
        The present cells (object array; anything but ``str`` is not canonical).
    bits : bool
        Whether ``{}`` (the empty set of a unary encoding) is a cell.
    """
    n = cells.size
    empty = None
    if bits:
        empty = np.asarray(cells == EMPTY_SET, dtype=bool)
        if empty.any():
            cells = cells[~empty]
        else:
            empty = None
    m = cells.size
    if m == 0:
        return np.zeros(n, dtype=np.int64), np.zeros(0, dtype=np.int64)
    try:
        raw = ",".join(cells.tolist()).encode("ascii")
    except (TypeError, UnicodeEncodeError):
        return None
    if (not raw or raw.count(b",") != m - 1 or raw.translate(None, _CODE_BYTES)
            or raw[0] in b"|," or raw[-1] in b"|,"
            or b"||" in raw or b",," in raw or b"|," in raw or b",|" in raw):
        return None
    b = np.frombuffer(raw, dtype=np.uint8)
    sep_at = np.flatnonzero((b == _COMMA) | (b == _PIPE))
    bounds = np.concatenate(([-1], sep_at, [b.size]))
    if (np.diff(bounds) - 1).max() > MAX_CODE_DIGITS:
        return None
    vals = np.fromstring(raw.translate(_SPACES), dtype=np.int64, sep=" ")
    if vals.size != sep_at.size + 1:  # pragma: no cover - a second guard: the checks above leave
        # no empty code, which fromstring would skip
        return None
    comma_idx = np.flatnonzero(b[sep_at] == _COMMA)
    lens = np.diff(np.concatenate(([-1], comma_idx, [sep_at.size])))
    if empty is not None:
        full = np.zeros(n, dtype=lens.dtype)
        full[~empty] = lens
        lens = full
    return lens, vals


def _split_lenient(text: pd.Series, codec: str, bad_cell) -> tuple[np.ndarray, np.ndarray]:
    """(codes per cell, all codes in order) of stripped cells that are not all canonical, read
    by ``pd.to_numeric`` (which also takes signs, decimals such as ``1.0`` and exponents); the
    first cell holding something that is not an integer is named by ``bad_cell``.

    Parameters
    ----------
    text : pandas.Series
        The present cells, stripped.
    codec : str
        ``int``, ``ints`` or ``bits`` (``{}`` is a cell of no code).
    bad_cell : callable
        ``bad_cell(position, why)`` builds the error naming the cell.
    """
    empty = (text == EMPTY_SET).to_numpy() if codec == "bits" else np.zeros(len(text), bool)
    parts = text.mask(empty, "").str.split("|")
    lens = np.where(empty, 0, parts.str.len().to_numpy())
    flat = parts.explode().to_numpy(dtype=object)
    flat = flat[~np.repeat(empty, np.where(empty, 1, lens))]
    nums = pd.to_numeric(pd.Series(flat, dtype=object), errors="coerce")
    with np.errstate(invalid="ignore"):  # inf % 1 is nan: not an integer either
        frac = nums.fillna(0.5).to_numpy() % 1 != 0
    if frac.any():
        bad = int(np.flatnonzero(frac)[0])
        pos = int(np.searchsorted(np.cumsum(lens), bad, side="right"))
        raise bad_cell(pos, "is not a randomized report of integer codes (a raw label? reports "
                            "hold category indices produced by the client)")
    with np.errstate(invalid="ignore"):  # a code past int64 (refused by validate_reports)
        return lens, nums.to_numpy().astype(np.int64)


def _decode_native(path: Path, attr_name: str, codec: str, cells: pd.Series, out: np.ndarray,
                   present_idx: np.ndarray) -> np.ndarray:
    """Cells stored as numbers (the ``native`` layout): ``int`` codes, ``float`` values."""
    vals = cells.to_numpy(dtype=np.float64, na_value=np.nan)[present_idx]
    if codec == "int":
        frac = vals % 1 != 0
        if frac.any():
            row = int(present_idx[np.flatnonzero(frac)[0]])
            raise ReportsFileError(
                f"{path.name}: column {attr_name!r}, row {row}: cell {cells.iloc[row]!r} is not an "
                "integer code")
        out = np.asarray(out).copy()
        out[present_idx] = vals.astype(np.int64)
        return out
    out = np.asarray(out, dtype=np.float64).copy()
    out[present_idx] = vals
    return out


def _decode_packed(path: Path, attr_name: str, cells: pd.Series, out: np.ndarray,
                   present_idx: np.ndarray) -> np.ndarray:
    """Unary reports stored bit-packed (the ``native`` layout): each cell ``np.packbits`` of the
    k bits (``PackedBits``), ceil(k/8) bytes with zero padding bits."""

    k = out.shape[1]
    width = packed_width(k)
    vals = cells.iloc[present_idx].tolist()
    lens = np.fromiter((len(v) if isinstance(v, (bytes, bytearray)) else -1 for v in vals),
                       dtype=np.int64, count=len(vals))
    if (lens != width).any():
        row = int(present_idx[np.flatnonzero(lens != width)[0]])
        raise ReportsFileError(
            f"{path.name}: column {attr_name!r}, row {row}: a packed report must hold {width} bytes "
            f"(k = {k} bits), got {cells.iloc[row]!r}")
    bits = np.unpackbits(np.frombuffer(b"".join(vals), dtype=np.uint8).reshape(-1, width), axis=1)
    if width * 8 > k and bits[:, k:].any():
        row = int(present_idx[np.flatnonzero(bits[:, k:].any(axis=1))[0]])
        raise ReportsFileError(f"{path.name}: column {attr_name!r}, row {row}: the packed report "
                               f"sets a bit past k = {k}")
    out = np.asarray(out).copy()
    out[present_idx] = bits[:, :k]
    return out


def has_metadata(path: str | Path) -> bool:
    """Whether ``path`` carries reidrisk reports metadata, valid or not.

    Metadata is a CSV's sidecar, or the key inside a Parquet file (a Parquet file's sidecar also
    counts); a directory (of partitions) counts as described. Says nothing about whether the
    metadata is valid.

    Parameters
    ----------
    path : str or Path
        The reports file.

    Returns
    -------
    bool
        True when the metadata is there (or ``path`` is a directory).
    """
    path = Path(path)
    if path.is_dir():  # a directory of partitions (read_reports refuses one without metadata)
        return True
    if sidecar_path(path).is_file():
        return True
    if path.name.lower().endswith((".parquet", ".pq")) and path.is_file():
        import pyarrow.parquet as pq

        try:
            return PARQUET_KEY in (pq.read_schema(path).metadata or {})
        except Exception:  # not a Parquet file: read_reports says so
            return False
    return False


def read_reports(path: str | Path, schema: Schema | None = None, mechanism: str | None = None,
                 epsilon: float | None = None) -> CollectedReports:
    """Read and validate a reports file (module doc).

    The one reader of randomized reports, used by ``reidrisk collect fit`` and ``reidrisk
    uniqueness score --db``. A file with metadata (written by ``write_reports``, e.g. by
    ``reidrisk collect simulate``) describes itself. A declared ``mechanism``/``epsilon``
    (whole-record budget) must then agree with it, and a given ``schema`` must be the file's.

    A file without metadata is refused, unless the caller declares what it holds: ``mechanism="grr"``,
    the whole-record ``epsilon`` (split evenly over the attributes) and the ``schema``. Such a file
    holds k-RR reports as category *labels*, one column per attribute (``read_table``'s rules; empty
    or ``?`` = missing), which is how a randomized database is often published.

    Parameters
    ----------
    path : str or pathlib.Path
        The reports file, or a directory (local, or an fsspec URL such as ``s3://bucket/reports/``)
        of partitions written by ``reidrisk.collect.partitioned`` (``write_partitioned``,
        ``PartitionWriter``): their chunks (``partitioned.iter_reports``, which validates each) are
        concatenated, so the whole batch is held in memory.
    schema : Schema, optional
        Must be the file's when it has metadata; required for a file without.
    mechanism : str, optional
        Must agree with the file's metadata; ``"grr"`` declares a file without metadata.
    epsilon : float, optional
        Whole-record budget; must agree with the file's metadata, required for a file without.

    Returns
    -------
    CollectedReports
        The validated reports and the protocol they follow (for a file of k-RR labels: grr at
        ``epsilon`` over all attributes).

    Raises
    ------
    FileNotFoundError
        When ``path`` is neither a file nor a directory or URL of partitions.
    ReportsFileError
        (or ``MechanismError``/``ProtocolError``/``SchemaError``) naming the file, column, row and
        value of the first problem.
    """
    if (isinstance(path, str) and "://" in path) or Path(path).is_dir():
        collected = _read_partitioned(path)
        _check_declared(path, collected, schema, mechanism, epsilon)
        return collected
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"reports file {str(path)!r} does not exist; check the path")
    if mechanism is not None and str(mechanism).lower() != "grr":
        raise ReportsFileError(
            f"{str(path)!r}: mechanism {mechanism!r} cannot be declared for a file; only k-RR "
            "reports ('grr') are one category per attribute. Files of other mechanisms carry "
            "metadata (write them with write_reports)")
    if not has_metadata(path) and mechanism is not None:
        if epsilon is None or schema is None:
            raise ReportsFileError(f"{str(path)!r}: a file of k-RR labels needs its whole-record "
                                   "budget and its schema")
        return _read_label_reports(path, schema, float(epsilon))
    collected = _read_described(path)
    _check_declared(path, collected, schema, mechanism, epsilon)
    return collected


def _read_partitioned(source: str | Path) -> CollectedReports:
    """All the reports of a directory or URL of partitions, as one batch: the chunks of
    ``partitioned.iter_reports`` (the one decoder of partitions) concatenated per attribute."""
    parts = partitions(source)
    header = read_partition_header(parts[0])
    chunks = list(iter_reports(parts))
    if not chunks:
        raise ReportsFileError(
            f"{str(source)!r}: its partitions hold no reports (0 rows); write reports into it "
            "(reidrisk.collect.partitioned.write_partitioned) or check the path")
    reps = tuple(np.concatenate([np.asarray(c.reports[j]) for c in chunks])
                 for j in range(len(header.schema)))
    return CollectedReports(RecordReports(header.schema, header.mechanisms, reps), header.protocol)


def _check_declared(path: Path | str, collected: CollectedReports, schema: Schema | None,
                    mechanism: str | None, epsilon: float | None) -> None:
    """A caller's declaration against the file's own metadata: refuse any disagreement."""
    meta_mech = collected.protocol.mechanism.lower()
    if mechanism is not None and meta_mech != str(mechanism).lower():
        raise ReportsFileError(
            f"{str(path)!r} holds {meta_mech!r} reports (its metadata), not {mechanism!r} as "
            "declared; drop the declaration (the file describes itself) or check the file")
    if epsilon is not None and not math.isclose(collected.budget, float(epsilon), rel_tol=1e-9):
        raise ReportsFileError(
            f"{str(path)!r} was randomized with a whole-record budget of {collected.budget:g} (its "
            f"metadata), not {float(epsilon):g} as declared; drop the declaration or fix it")
    if schema is not None and schema.to_dict() != collected.schema.to_dict():
        ours, theirs = schema.to_dict()["attributes"], collected.schema.to_dict()["attributes"]
        diff = [a.get("name") for a, b in zip(ours, theirs) if a != b]
        if len(ours) != len(theirs) or not diff:
            diff = sorted(set(schema.names) ^ set(collected.schema.names)) or schema.names
        raise ReportsFileError(
            f"{str(path)!r} was written with a different schema than the one given (they differ in "
            f"{', '.join(map(str, diff))}); use the schema stored in the reports file's metadata")


def _read_label_reports(path: Path, schema: Schema, epsilon: float) -> CollectedReports:
    """k-RR reports stored as labels (``read_reports`` doc): encode, then validate as reports."""

    frame = read_table(path)
    absent = [c for c in schema.names if c not in frame.columns]
    if absent:
        raise ReportsFileError(f"{str(path)!r} lacks the schema column(s) {', '.join(absent)}")
    try:
        codes = schema.encode(frame[schema.names])
    except SchemaError as exc:
        raise SchemaError(f"{str(path)!r}: {exc}") from None
    protocol = Protocol(epsilon, None, "grr")
    mechs = protocol.mechanisms(schema)
    reps = []
    for attr, mech, col in zip(schema, mechs, codes.T):
        try:
            reps.append(mech.validate_reports(np.asarray(col, dtype=np.int64)))
        except MechanismError as exc:
            raise ReportsFileError(f"{path.name}: column {attr.name!r}: {exc}") from None
    return CollectedReports(RecordReports(schema, tuple(mechs), tuple(reps)), protocol)


@dataclass(frozen=True)
class ReportsHeader:
    """What a reports file's metadata declares (``read_header``): enough to decode its cells.

    Parameters
    ----------
    meta : dict
        The parsed metadata (module doc), kept for its declared ``privacy_loss`` and ``n``.
    schema : Schema
        The attributes, from ``meta["schema"]``.
    protocol : Protocol
        The protocol the reports follow, from ``meta["protocol"]``.
    mechanisms : tuple of Mechanism
        Each attribute's mechanism, rebuilt from its saved parameters (schema order).
    codecs : tuple of str
        Each attribute's cell codec (schema order).
    """

    meta: dict
    schema: Schema
    protocol: Protocol
    mechanisms: tuple
    codecs: tuple


def read_header(path: str | Path, meta: dict) -> ReportsHeader:
    """The schema, protocol and rebuilt mechanisms of parsed metadata.

    Parameters
    ----------
    path : str or Path
        The file the metadata came from, named in errors.
    meta : dict
        The parsed metadata (module doc).

    Returns
    -------
    ReportsHeader
        ``meta`` with the schema, protocol, mechanisms and codecs it declares.

    Raises
    ------
    ReportsFileError
        For a bad schema, attributes that do not match it, mechanism parameters that do not
        rebuild, or a codec that is not the mechanism's.
    """
    path = Path(path)
    try:
        schema = Schema.from_dict(meta["schema"])
    except SchemaError as exc:
        raise ReportsFileError(f"{str(path)!r}: bad schema in the metadata: {exc}") from None
    protocol = Protocol.from_dict(meta["protocol"])
    attrs = meta["attributes"]
    if [a.get("name") for a in attrs] != schema.names:
        raise ReportsFileError(
            f"{str(path)!r}: the metadata's attributes {[a.get('name') for a in attrs]} do not "
            f"match the schema {schema.names}"
        )
    mechs, codecs = [], []
    for attr, entry in zip(schema, attrs):
        mech = rebuild_mechanism(attr.name, attr.size, entry.get("mechanism", {}))
        codec = entry.get("codec")
        if codec != codec_of(mech):
            raise ReportsFileError(
                f"{str(path)!r}: column {attr.name!r} declares codec {codec!r}, but {mech.name!r} "
                f"reports use {codec_of(mech)!r}"
            )
        mechs.append(mech)
        codecs.append(codec)
    return ReportsHeader(meta, schema, protocol, tuple(mechs), tuple(codecs))


def decode_frame(path: str | Path, header: ReportsHeader, frame: pd.DataFrame) -> CollectedReports:
    """Decode and validate a frame of report cells declared by ``header``.

    The frame is all rows of a file, or a chunk of them. Checked: every cell, every report
    against its mechanism, the batch against the protocol and the declared privacy loss (module
    doc).

    Parameters
    ----------
    path : str or Path
        The source, named in errors with the column and row.
    header : ReportsHeader
        What the frame declares (``read_header``).
    frame : pandas.DataFrame
        The report cells, one column per attribute.

    Returns
    -------
    CollectedReports
        The validated reports and the header's protocol.

    Raises
    ------
    ReportsFileError
        Naming the source, column and row of the first problem: columns that do not match the
        schema, a bad cell or report, a batch that breaks the protocol, or a declared privacy
        loss below the one the reports imply.
    """
    path = Path(path)
    schema, protocol = header.schema, header.protocol
    absent = [c for c in schema.names if c not in frame.columns]
    extra = [c for c in frame.columns if c not in schema.names]
    if absent or extra:
        raise ReportsFileError(
            f"{str(path)!r}: columns do not match the schema (absent: {absent}, unexpected: {extra})"
        )
    reps = []
    for attr, mech, codec in zip(schema, header.mechanisms, header.codecs):
        rep = decode_column(path, attr.name, mech, codec, frame[attr.name])
        try:
            rep = mech.validate_reports(rep)
        except MechanismError as exc:
            raise ReportsFileError(f"{path.name}: column {attr.name!r}: {exc}") from None
        reps.append(rep)
    collected = CollectedReports(RecordReports(schema, header.mechanisms, tuple(reps)), protocol)
    try:
        protocol.check_reports(collected.reports)
    except ProtocolError as exc:
        raise ReportsFileError(f"{path.name}: {exc}") from None
    check_declared_loss(f"reports file {str(path)!r}", header.meta, collected.privacy_loss)
    return collected


def _read_described(path: Path) -> CollectedReports:
    meta, frame = _read_metadata(path)
    header = read_header(path, meta)
    schema = header.schema
    if frame is None:
        sep = "\t" if path.name.lower().endswith(".tsv") else ","
        try:
            frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_values=[""])
        except pd.errors.EmptyDataError:
            raise ReportsFileError(f"reports file {str(path)!r} is empty") from None
        except UnicodeDecodeError:
            raise ReportsFileError(f"reports file {str(path)!r} is not UTF-8 text (a binary "
                                   "file?); reports files are CSV or Parquet") from None
        except pd.errors.ParserError as exc:
            raise ReportsFileError(
                f"reports file {str(path)!r} is not a well-formed CSV table "
                f"({' '.join(str(exc).split()).removeprefix('Error tokenizing data. C error: ')}); "
                "was it edited by hand?") from None
    absent = [c for c in schema.names if c not in frame.columns]
    extra = [c for c in frame.columns if c not in schema.names]
    if absent or extra:
        raise ReportsFileError(
            f"{str(path)!r}: columns do not match the schema (absent: {absent}, unexpected: {extra})"
        )
    if "n" in meta and int(meta["n"]) != len(frame):
        raise ReportsFileError(
            f"{str(path)!r} has {len(frame)} rows but its metadata declares n = {meta['n']}; the "
            "file is truncated or was edited"
        )
    return decode_frame(path, header, frame)


def check_declared_loss(source: str, meta: dict, implied: float,
                        error: type[Exception] = ReportsFileError) -> None:
    """Refuse metadata whose declared guarantee is below the loss its reports imply.

    The declaration is ``privacy_loss`` (``epsilon`` in older files). An absent or larger one is
    not an error: the caller uses the recomputed value (older files stated a summed budget).

    Parameters
    ----------
    source : str
        The source, named in the error.
    meta : dict
        The parsed metadata.
    implied : float
        The loss the mechanisms and reports imply.
    error : type of Exception
        What to raise (default ``ReportsFileError``).

    Raises
    ------
    error
        When the declaration is not a number, or is below ``implied`` beyond a relative rounding
        of 1e-9.
    """
    declared = meta.get("privacy_loss", meta.get("epsilon"))
    if declared is None:
        return
    try:
        value = float(declared)
    except (TypeError, ValueError):
        raise error(
            f"{source} declares privacy_loss {declared!r}, which is not a number; delete the entry "
            "(it is recomputed from the mechanisms and reports) or fix it") from None
    # the implied loss is a sum of closed-form log ratios: allow their rounding (relative 1e-9)
    if math.isnan(value) or value < implied and not math.isclose(value, implied, rel_tol=1e-9):
        raise error(
            f"{source} declares a privacy loss of {value:g} per person, but its mechanisms and "
            f"reports imply {implied:.6g}: the declared guarantee is false. Re-collect the reports "
            "with the declared budget, or correct privacy_loss in the metadata to the implied value"
        )


__all__ = [
    "CollectedReports", "PARTITION_ROW_GROUP", "REPORTS_FORMAT", "REPORTS_VERSION",
    "ReportsFileError", "ReportsHeader", "check_declared_loss", "codec_of", "decode_column",
    "decode_frame", "has_metadata", "jsonable", "read_header", "read_reports", "rebuild_mechanism",
    "reports_frame", "sidecar_path", "write_partition", "write_reports",
]


CHUNK_CELLS = 1 << 22
"""Default chunk size in report-matrix cells (rows x total categories F): a chunk's float32
support matrix is then at most 16 MiB, so the reader's memory does not grow with n."""

_SAME_KEYS = ("schema", "protocol", "attributes")


def default_chunk_rows(sizes: Iterable[int]) -> int:
    """Rows per chunk for attributes of domain sizes ``sizes``.

    ``CHUNK_CELLS / F``, between 1,024 and 65,536 (one Parquet row group of ``write_partition``).

    Parameters
    ----------
    sizes : iterable of int
        The attributes' domain sizes (F their sum).

    Returns
    -------
    int
        Rows per chunk: ``CHUNK_CELLS // F`` clipped to [1024, ``PARTITION_ROW_GROUP``].
    """
    F = max(1, int(sum(int(f) for f in sizes)))
    return int(min(PARTITION_ROW_GROUP, max(1024, CHUNK_CELLS // F)))


# ---------------------------------------------------------------------------------------------
# where the partitions are
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Partition:
    """One Parquet file of reports, small and picklable: what is sent to a worker.

    Parameters
    ----------
    url : str
        Local path or fsspec URL of the file.
    rows : int
        Number of reports in it, from its Parquet footer.
    storage_options : dict, optional
        Passed to fsspec for the URL (credentials, endpoints); not compared by ``==``.
    """

    url: str
    rows: int
    storage_options: dict | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        """The file name, the last component of ``url``."""
        return self.url.rstrip("/").rsplit("/", 1)[-1]


def _join(source: str, path: str, root: str) -> str:
    """The URL of ``path`` (inside the filesystem of ``source``, whose own path is ``root``)."""
    if not is_url(source):
        return path
    return source.rstrip("/") + path[len(root.rstrip("/")):]


def partitions(source, storage_options: dict | None = None) -> list[Partition]:
    """The partitions of ``source``, sorted by path so that every run sees the same order.

    A directory is searched recursively; files and folders whose name starts with ``.`` or ``_``
    are skipped, as by ``pyarrow.dataset``.

    Parameters
    ----------
    source : str, Path or list
        A directory, one file, or a list of either (or of ``Partition``); local or an fsspec URL.
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Returns
    -------
    list of Partition
        The partitions, sorted by path.
    """
    import pyarrow.fs as pafs

    if isinstance(source, Partition):
        return [source]
    if isinstance(source, (list, tuple)):
        return [p for s in source for p in partitions(s, storage_options)]
    source = str(source)
    fs, root = filesystem(source, storage_options)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"reports {source!r} do not exist; check the path or URL")
    if info.type == pafs.FileType.File:
        files = [root]
    else:
        base = root.rstrip("/")
        files = sorted(
            i.path for i in fs.get_file_info(pafs.FileSelector(root, recursive=True))
            if i.type == pafs.FileType.File and not any(
                part.startswith((".", "_")) for part in i.path[len(base):].split("/")))
        if not files:
            raise ReportsFileError(f"{source!r} holds no Parquet files of reports")
    out = []
    for f in files:
        url = source if info.type == pafs.FileType.File else _join(source, f, root)
        out.append(Partition(url, _footer(fs, f, url).num_rows, storage_options))
    return out


def _footer(fs, path: str, url: str):
    import pyarrow.parquet as pq

    try:
        with fs.open_input_file(path) as fh:
            return pq.ParquetFile(fh).metadata
    except Exception as exc:  # noqa: BLE001 - any unreadable file: name it
        raise ReportsFileError(f"{url!r} is not a readable Parquet file: {exc}") from None


@contextlib.contextmanager
def _open(partition: Partition):
    """The partition as a ``pyarrow.parquet.ParquetFile``, its file closed on leaving."""
    import pyarrow.parquet as pq

    fs, path = filesystem(partition.url, partition.storage_options)
    try:
        handle = fs.open_input_file(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable file: name it
        raise ReportsFileError(f"cannot open {partition.url!r}: {exc}") from None
    with handle:
        try:
            pfile = pq.ParquetFile(handle)
        except Exception as exc:  # noqa: BLE001
            raise ReportsFileError(
                f"{partition.url!r} is not a readable Parquet file: {exc}") from None
        yield pfile


def _header_of(partition: Partition, pfile) -> ReportsHeader:
    raw = (pfile.schema_arrow.metadata or {}).get(PARQUET_KEY)
    if raw is None:
        raise ReportsFileError(
            f"{partition.url!r} carries no reidrisk reports metadata; every partition must be "
            "written with it (reidrisk.collect.partitioned.write_partitioned)")
    meta = _parse_meta(Path(partition.name), raw)
    if "n" in meta and int(meta["n"]) != pfile.metadata.num_rows:
        raise ReportsFileError(
            f"{partition.url!r} has {pfile.metadata.num_rows} rows but its metadata declares "
            f"n = {meta['n']}; the file is truncated or was edited")
    return read_header(partition.url, meta)


def read_partition_header(partition: Partition | str, storage_options: dict | None = None
                          ) -> ReportsHeader:
    """The metadata of one partition (schema, protocol, rebuilt mechanisms, codecs).

    Parameters
    ----------
    partition : Partition or str
        The partition, or its path or URL.
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Returns
    -------
    ReportsHeader
        The partition's schema, protocol, mechanisms and codecs.
    """
    if not isinstance(partition, Partition):
        partition = partitions(partition, storage_options)[0]
    with _open(partition) as pfile:
        return _header_of(partition, pfile)


def _same(a: ReportsHeader, b: ReportsHeader) -> bool:
    return all(json.dumps(a.meta[k], sort_keys=True) == json.dumps(b.meta[k], sort_keys=True)
               for k in _SAME_KEYS)


def describe(source, storage_options: dict | None = None) -> ReportsHeader:
    """The header shared by every partition of ``source``.

    Partitions that disagree on the schema, protocol or mechanisms are refused (their counts
    could not be added).

    Parameters
    ----------
    source : str, Path or list
        A directory, one file, or a list of either (or of ``Partition``); local or an fsspec URL.
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Returns
    -------
    ReportsHeader
        The header every partition shares (read from the first).

    Raises
    ------
    ReportsFileError
        Naming the first partition written with another schema, protocol or mechanisms.
    """
    parts = partitions(source, storage_options)
    first = read_partition_header(parts[0])
    for p in parts[1:]:
        if not _same(first, read_partition_header(p)):
            raise ReportsFileError(
                f"partition {p.url!r} was written with another schema, protocol or mechanisms than "
                f"{parts[0].url!r}; counts can only be summed over one collection")
    return first


# ---------------------------------------------------------------------------------------------
# reading partitions a chunk at a time
# ---------------------------------------------------------------------------------------------
def iter_partition(partition: Partition, chunk_rows: int | None = None,
                   header: ReportsHeader | None = None) -> Iterator[CollectedReports]:
    """The reports of one partition, one chunk of rows at a time, decoded and validated.

    Parameters
    ----------
    partition : Partition
        The partition.
    chunk_rows : int, optional
        Rows per chunk (default ``default_chunk_rows`` of the schema's domain sizes).
    header : ReportsHeader, optional
        The header the partition must share (``describe``); ``None``: not compared.

    Yields
    ------
    CollectedReports
        The reports of one chunk and their protocol.

    Raises
    ------
    ReportsFileError
        For a partition written with another header, or a bad cell (naming the chunk's first row).
    """
    with _open(partition) as pfile:
        own = _header_of(partition, pfile)
        if header is not None and not _same(header, own):
            raise ReportsFileError(f"partition {partition.url!r} was written with another schema, "
                                   "protocol or mechanisms than the first partition")
        rows = chunk_rows or default_chunk_rows(own.schema.sizes)
        start = 0
        for batch in _batches(partition, pfile, int(rows)):
            try:
                chunk = decode_frame(partition.name, own, batch.to_pandas())
            except ReportsFileError as exc:
                if not start:
                    raise
                raise ReportsFileError(f"{exc} (rows of the chunk starting at row {start} of "
                                       f"{partition.url!r}, counted from 0)") from None
            start += batch.num_rows
            yield chunk


def _batches(partition: Partition, pfile, rows: int):
    """``pfile``'s record batches; a page that cannot be decoded is an error naming the file."""
    batches = pfile.iter_batches(batch_size=rows)
    start = 0
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001 - any corrupt page (pyarrow's OSError, ArrowException)
            raise ReportsFileError(
                f"{partition.url!r} is corrupt: the rows from row {start} (counted from 0) cannot "
                f"be read ({' '.join(str(exc).split())}); write that partition again or remove "
                "it") from None
        start += batch.num_rows
        yield batch


def iter_reports(source, *, chunk_rows: int | None = None, storage_options: dict | None = None
                 ) -> Iterator[RecordReports]:
    """The reports of every partition of ``source``, one chunk of rows at a time.

    Each chunk is decoded and validated by ``reports_io.decode_frame`` (every cell, every report,
    the protocol, the declared privacy loss). A row in an error message counts from the start of
    its chunk, whose first row in the partition the message names. Memory: one chunk.

    Parameters
    ----------
    source : str, Path or list
        A directory, one file, or a list of either (or of ``Partition``); local or an fsspec URL.
    chunk_rows : int, optional
        Rows per chunk (default ``default_chunk_rows`` of the schema's domain sizes).
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoints) for URLs.

    Yields
    ------
    RecordReports
        The decoded, validated reports of one chunk.
    """
    parts = partitions(source, storage_options)
    header = read_partition_header(parts[0])
    for p in parts:
        for chunk in iter_partition(p, chunk_rows, header):
            yield chunk.reports
