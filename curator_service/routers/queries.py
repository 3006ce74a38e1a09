"""The curator's side of manual measurements: pending queries, answers by query id or by the curator's own row
identifier (one by one, or a CSV), "cannot measure", corrections, and naming the identifier column (the lab
workflow, :mod:`curator_service.services.lab`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Request, UploadFile

from curator_service.routers.auth import Curator
from curator_service.routers.params import DatasetFilter, DatasetId, QueryId, SessionId
from curator_service.services import lab, queries
from shared.api.governance import (
    AnswersOut,
    CannotMeasure,
    Correction,
    IdentifiedAnswers,
    IdentifierColumn,
    IdentifierColumnOut,
    LabQuery,
    PlausibleRange,
    Worklist,
)
from shared.api.schemas import AnswerRequest, MeasurementSpec, PendingQueryList, QueryResult

router = APIRouter(tags=["sessions and queries"])


@router.get("/v1/queries", response_model=PendingQueryList, summary="Queries waiting for a manual measurement")
def list_pending_queries(
    request: Request,
    principal: Curator,
    dataset_id: DatasetFilter = None,
) -> PendingQueryList:
    """Manual-evaluator queries waiting for a measurement, with the row to measure by its identifier (the MRN, or the
    file row number) and what to measure (the curator's own numbers; never shown to the modeler)."""
    with request.app.state.db.read() as session:
        return lab.identified_pending(session, request.app.state.tables, dataset_id)


@router.post("/v1/queries/{query_id}/answer", response_model=QueryResult,
             summary="Post the measurement of a pending manual query")
def answer_query(request: Request, principal: Curator, query_id: QueryId, body: AnswerRequest) -> QueryResult:
    """Posts the measured value of a pending manual query; an answer cannot be changed afterwards except by a recorded
    correction."""
    with request.app.state.db.write() as session:
        return queries.answer_query(session, principal, query_id, body.value, body.confirm_outside_range)


@router.put("/v1/datasets/{dataset_id}/identifier-column", response_model=IdentifierColumnOut,
            summary="Name the column that identifies a row for the curator (e.g. the MRN; never sent to a modeler)")
def set_identifier_column(request: Request, principal: Curator, dataset_id: DatasetId,
                          body: IdentifierColumn) -> IdentifierColumnOut:
    """Names the column that identifies a row for the curator's lab (e.g. a record number). It is never sent to a
    modeler."""
    with request.app.state.db.write() as session:
        return lab.set_identifier_column(session, request.app.state.tables, principal, dataset_id, body.column)


@router.put("/v1/datasets/{dataset_id}/plausible-range", response_model=MeasurementSpec,
            summary="Set the plausible range of a manual measurement (public; answers outside it must be confirmed)")
def set_plausible_range(request: Request, principal: Curator, dataset_id: DatasetId,
                        body: PlausibleRange) -> MeasurementSpec:
    """Sets [low, high], in the measurement's unit, or removes it (both null). An answer or correction outside it is
    refused (422 ``outside_plausible_range``) until sent again with ``confirm_outside_range``."""
    with request.app.state.db.write() as session:
        return lab.set_plausible_range(session, principal, dataset_id, body.low, body.high)


@router.get("/v1/datasets/{dataset_id}/worklist", response_model=Worklist,
            summary="A dataset's pending manual queries, by the curator's row identifier")
def worklist(request: Request, principal: Curator, dataset_id: DatasetId) -> Worklist:
    """A dataset's pending manual queries listed by the curator's row identifier, for the lab."""
    with request.app.state.db.read() as session:
        return lab.worklist(session, request.app.state.tables, dataset_id)


@router.post("/v1/datasets/{dataset_id}/answers", response_model=AnswersOut,
             summary="Answer pending queries by row identifier, all or nothing")
def answer_by_identifier(request: Request, principal: Curator, dataset_id: DatasetId,
                         body: IdentifiedAnswers) -> AnswersOut:
    """Answers pending queries by the curator's row identifier, all or nothing."""
    answers = [lab.Answer(f"answer {k}", a.identifier, a.value) for k, a in enumerate(body.answers, start=1)]
    with request.app.state.db.write() as session:
        return lab.answer_by_identifier(session, request.app.state.tables, principal, dataset_id, answers,
                                        body.confirm_outside_range)


@router.post("/v1/datasets/{dataset_id}/answers/csv", response_model=AnswersOut,
             summary="Answer pending queries from a CSV (a header line, then identifier,value lines), all or nothing")
def answer_from_csv(request: Request, principal: Curator, dataset_id: DatasetId,
                    file: Annotated[UploadFile, File(description="A header line (e.g. mrn,value), then "
                                                                 "identifier,value lines.")],
                    confirm_outside_range: bool = False) -> AnswersOut:
    """Answers pending queries from a CSV (a header line, then identifier,value lines), all or nothing; a value
    outside the dataset's plausible range is refused unless ``confirm_outside_range=true``."""
    answers = lab.parse_answers_csv(file.file.read())
    with request.app.state.db.write() as session:
        return lab.answer_by_identifier(session, request.app.state.tables, principal, dataset_id, answers,
                                        confirm_outside_range)


@router.post("/v1/queries/{query_id}/cannot-measure", response_model=QueryResult,
             summary="Mark a pending query 'cannot measure' (status unmeasurable; it keeps its one charge)")
def cannot_measure(request: Request, principal: Curator, query_id: QueryId, body: CannotMeasure) -> QueryResult:
    """Marks a pending query as unmeasurable; it keeps its one charge."""
    with request.app.state.db.write() as session:
        return lab.cannot_measure(session, principal, query_id, body.reason)


@router.post("/v1/queries/{query_id}/correct", response_model=QueryResult,
             summary="Correct a manual answer (the query's notes keep the old value and the reason)")
def correct_answer(request: Request, principal: Curator, query_id: QueryId, body: Correction) -> QueryResult:
    """Corrects a manual answer with a reason; the old and new value and the reason go to the query's notes, the
    audit log records only the query id."""
    with request.app.state.db.write() as session:
        return lab.correct(session, principal, query_id, body.value, body.reason, body.confirm_outside_range)


@router.get("/v1/sessions/{session_id}/lab-queries", response_model=list[LabQuery],
            summary="A session's queries as the lab sees them: each row by its identifier (e.g. the MRN)")
def session_lab_queries(request: Request, principal: Curator, session_id: SessionId) -> list[LabQuery]:
    """The session's queries in order with the identifier and file row of each row asked for, its status and value.
    Curator only: identifiers and file rows never reach a modeler."""
    with request.app.state.db.read() as session:
        return lab.session_rows(session, request.app.state.tables, session_id)


@router.get("/v1/sessions/{session_id}/notes", response_model=list[lab.QueryNoteOut],
            summary="The lab's notes on a session's queries: corrections and 'cannot measure', with reasons")
def query_notes(request: Request, principal: Curator, session_id: SessionId) -> list[lab.QueryNoteOut]:
    """Every correction and "cannot measure" of the session's queries, oldest first, with the old and new value
    and the reason. Curator only: values and reasons stay out of the audit log and away from modelers."""
    with request.app.state.db.read() as session:
        return lab.query_notes(session, session_id)
