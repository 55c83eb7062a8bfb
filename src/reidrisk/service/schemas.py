"""Request and response bodies of the collection service (they make the OpenAPI document)."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class ProtocolIn(BaseModel):
    """How clients report (``reidrisk.collect.Protocol``): the whole-record budget ``epsilon``, the
    number ``attributes_per_person`` of attributes each person reports (``null`` = all, the
    paper's even split; ``k`` is accepted as its former name), the per-attribute mechanism and the
    sampling rule ``among``."""

    model_config = ConfigDict(extra="forbid")
    epsilon: float = Field(gt=0)
    attributes_per_person: int | None = Field(
        default=None, ge=1, validation_alias=AliasChoices("attributes_per_person", "k"))
    mechanism: str = "subset"
    among: str = "present"
    mechanism_options: dict[str, Any] = Field(default_factory=dict)


class SurveyIn(BaseModel):
    """A new survey: a name, the schema (``reidrisk.schema.Schema.to_dict``) and the protocol."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    schema_: dict[str, Any] = Field(alias="schema")
    protocol: ProtocolIn


class SurveyPatch(BaseModel):
    """A change to a survey; ``schema``/``protocol`` only while it has no reports."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=1, max_length=200)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    protocol: ProtocolIn | None = None


class SurveyOut(BaseModel):
    id: str
    name: str
    revision: int
    n_reports: int
    config: dict[str, Any]


class CredentialIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = Field(default="", max_length=200)
    count: int = Field(default=1, ge=1, le=10_000)


class CredentialOut(BaseModel):
    id: str
    label: str
    kind: str
    revoked: bool
    token: str | None = Field(default=None, description="shown once, when issued")


class ReportIn(BaseModel):
    """One randomized report: a client-generated UUID and a cell per reported attribute
    (``reidrisk.service.wire``); absent or null = missing."""

    id: str
    values: dict[str, str | None]


class BatchIn(BaseModel):
    reports: list[ReportIn]


class IngestOut(BaseModel):
    accepted: int = Field(description="reports stored by this request")
    duplicates: int = Field(description="report ids already stored (retries), not stored again")
    n_reports: int = Field(description="reports the survey holds after this request")


class ErrorOut(BaseModel):
    detail: str
    report: int | None = None
