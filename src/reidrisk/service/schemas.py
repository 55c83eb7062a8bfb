"""Request and response bodies of the collection service (they make the OpenAPI document)."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

PRINTABLE = r"^[^\x00-\x1f\x7f]*$"
"""Names, labels and reasons hold no control character (a NUL byte cannot be stored)."""


class ProtocolIn(BaseModel):
    """How clients report (``reidrisk.collect.Protocol``).

    Parameters
    ----------
    epsilon : float
        The whole-record budget, > 0.
    attributes_per_person : int or null
        Attributes each person reports, >= 1 (``null``, the default: all, the paper's even split;
        ``k`` is accepted as its former name).
    mechanism : str
        The per-attribute mechanism's registry name (default ``"subset"``).
    among : str
        Which attributes are sampled: ``"present"`` (default) or ``"all"``.
    mechanism_options : dict
        Extra keyword arguments of the mechanism (e.g. a hash range).
    """

    model_config = ConfigDict(extra="forbid")
    epsilon: float = Field(gt=0)
    attributes_per_person: int | None = Field(
        default=None, ge=1, validation_alias=AliasChoices("attributes_per_person", "k"))
    mechanism: str = "subset"
    among: str = "present"
    mechanism_options: dict[str, Any] = Field(default_factory=dict)


class SurveyIn(BaseModel):
    """A new survey.

    Parameters
    ----------
    name : str
        The survey's name, 1 to 200 characters.
    schema : dict
        The attributes (``reidrisk.schema.Schema.to_dict``).
    protocol : ProtocolIn
        How clients report.
    allow_large_epsilon : bool
        The owner's override of the largest budget (``reidrisk.service.app.MAX_EPSILON``):
        budgets up to ``EPSILON_HARD_LIMIT`` are then accepted (default false).
    """

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200, pattern=PRINTABLE)
    schema_: dict[str, Any] = Field(alias="schema")
    protocol: ProtocolIn
    allow_large_epsilon: bool = False


class SurveyPatch(BaseModel):
    """A change to a survey; ``schema``/``protocol`` only while it has never stored a report.

    Parameters
    ----------
    name : str, optional
        A new name, 1 to 200 characters.
    schema : dict, optional
        A new schema (``reidrisk.schema.Schema.to_dict``).
    protocol : ProtocolIn, optional
        A new protocol.
    allow_large_epsilon : bool
        As in ``SurveyIn``.
    """

    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=1, max_length=200, pattern=PRINTABLE)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    protocol: ProtocolIn | None = None
    allow_large_epsilon: bool = False


class SurveyOut(BaseModel):
    """A survey as the service holds it.

    Parameters
    ----------
    id : str
        The survey's id.
    name : str
        Its name.
    revision : int
        Bumped by every change.
    n_reports : int
        Reports stored.
    config : dict
        The schema, protocol and each attribute's mechanism parameters (the reports-file
        metadata of ``reidrisk.collect.reports_io``), what a client needs to randomize.
    """

    id: str
    name: str
    revision: int
    n_reports: int
    config: dict[str, Any]


class CredentialIn(BaseModel):
    """A request for new submission codes or researcher tokens.

    Parameters
    ----------
    label : str
        Who they are for (e.g. an institution), up to 200 characters; shared by all issued.
    count : int
        How many to issue, 1 to 10,000 (default 1).
    quota : int
        For submission codes: the most reports each may store, 1 to 10^8. The default, 1, is a
        person's code (one person, one report); an institution sending for many people declares
        their number. Ignored for researcher tokens.
    """

    model_config = ConfigDict(extra="forbid")
    label: str = Field(default="", max_length=200, pattern=PRINTABLE)
    count: int = Field(default=1, ge=1, le=10_000)
    quota: int = Field(default=1, ge=1, le=100_000_000)


class CredentialOut(BaseModel):
    """A submission code or researcher token.

    Parameters
    ----------
    id : str
        The credential's id (used to revoke it).
    label : str
        Its label.
    kind : str
        ``"code"`` (submission code) or ``"researcher"`` (researcher token).
    revoked : bool
        Whether it has been revoked.
    quota : int or null
        A submission code's quota (reports it may store); ``null``: no limit (researcher tokens,
        codes issued before quotas existed).
    used : int
        Reports a submission code has stored.
    token : str or null
        The secret itself, shown once, when issued; ``null`` otherwise.
    """

    id: str
    label: str
    kind: str
    revoked: bool
    quota: int | None = None
    used: int = 0
    token: str | None = Field(default=None, description="shown once, when issued")


class ReportIn(BaseModel):
    """One randomized report: a client-generated UUID and a cell per reported attribute.

    The cells are in the wire format (``reidrisk.service.wire``); absent or null = missing.

    Parameters
    ----------
    id : str
        Client-generated UUID; a retry with the same id is stored once.
    values : dict of str to str or null
        The cell of each reported attribute, by attribute name.
    """

    id: str
    values: dict[str, str | None]


class BatchIn(BaseModel):
    """A batch of randomized reports.

    Parameters
    ----------
    reports : list of ReportIn
        The reports, stored all or none.
    """

    reports: list[ReportIn]


class IngestOut(BaseModel):
    """What a batch did.

    Parameters
    ----------
    accepted : int
        Reports stored by this request.
    duplicates : int
        Report ids already stored (retries), not stored again.
    n_reports : int
        Reports the survey holds after this request.
    """

    accepted: int = Field(description="reports stored by this request")
    duplicates: int = Field(description="report ids already stored (retries), not stored again")
    n_reports: int = Field(description="reports the survey holds after this request")


class WithdrawIn(BaseModel):
    """A withdrawal of a submission code's reports.

    Parameters
    ----------
    reason : str
        Why, up to 500 characters, kept in the survey's audit log.
    """

    model_config = ConfigDict(extra="forbid")
    reason: str = Field(default="", max_length=500, pattern=PRINTABLE)


class WithdrawOut(BaseModel):
    """What a withdrawal did.

    Parameters
    ----------
    credential_id : str
        The submission code, now revoked.
    withdrawn : int
        Reports taken out of the survey's counts.
    n_reports : int
        Reports the survey counts after it.
    """

    credential_id: str
    withdrawn: int
    n_reports: int


class AuditOut(BaseModel):
    """One entry of a survey's audit log.

    Parameters
    ----------
    at : float
        When (seconds since the epoch).
    action : str
        What was done (``"withdraw"``).
    credential_id : str or null
        The submission code concerned.
    n_reports : int
        Reports concerned.
    detail : str
        The reason given.
    """

    at: float
    action: str
    credential_id: str | None
    n_reports: int
    detail: str


class ErrorOut(BaseModel):
    """A refusal (every 4xx response).

    Parameters
    ----------
    detail : str
        What is wrong and how to fix it.
    report : int or null
        Index in the batch of the report at fault, when one is.
    """

    detail: str
    report: int | None = None
