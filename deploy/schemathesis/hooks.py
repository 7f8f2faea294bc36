"""Schemathesis hooks for `just api-contract` (loaded with SCHEMATHESIS_HOOKS): generated ids
pointed at the seeded tenants, events and workspaces, and time windows put in order (see
`map_case`).
"""

import json
import os
from datetime import datetime

import schemathesis
from schemathesis import GenerationMode
from schemathesis.generation.meta import TestPhase


def _seeded():
    """The seeded tenants (`just api-contract` writes them): id, team, event ids."""
    path = os.environ.get("DOORMAN_CONTRACT_SEED")
    if not path:
        return []
    with open(path, encoding="utf-8") as seed:
        return json.load(seed)


SEEDED = _seeded()


def _instant(text):
    """An RFC 3339 date-time as Python reads it, or None."""
    try:
        return datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return None


def _window_in_order(case):
    """A schema cannot say "until not before since": a valid case naming both in the wrong
    order (which the server refuses, 422 naming `until`) gets them swapped, and one whose
    times Python cannot compare loses its `until`."""
    query = case.query
    if not query or "since" not in query or "until" not in query:
        return
    since, until = _instant(query["since"]), _instant(query["until"])
    try:
        # At or before: Python keeps microseconds, the server nanoseconds.
        if until <= since:
            query["since"], query["until"] = query["until"], query["since"]
    except TypeError:
        del query["until"]


@schemathesis.hook
def map_case(ctx, case):
    """A generated tenant, event or workspace id names nothing, so operations that read or
    remove one would only ever answer 404, and a search by event id find nothing: half of the
    valid cases (chosen by what was generated, so a run stays reproducible) name a seeded
    tenant's instead. Not in the stateful phase: there the tenant comes from a link (the one
    the scenario created), and pointing the step at a seeded tenant (deleted, perhaps, by an
    earlier case) would make its 404 look like "a created resource not found"."""
    if case.meta is None or case.meta.generation.mode != GenerationMode.POSITIVE:
        return case
    _window_in_order(case)
    if case.meta.phase.name == TestPhase.STATEFUL:
        return case
    query = case.query
    if SEEDED and query and isinstance(query.get("event_id"), str) and not len(query["event_id"]) % 2:
        # findEvents: a seeded event's id, found in its tenant.
        generated = query["event_id"]
        seed = SEEDED[len(generated) % len(SEEDED)]
        query["event_id"] = seed["events"][len(generated) % len(seed["events"])]
    params = case.path_parameters
    if not SEEDED or not params:
        return case
    for name, pick in (("event_id", "events"), ("workspace_id", "teams")):
        generated = params.get(name)
        if generated is None or len(generated) % 2:
            continue
        seed = SEEDED[len(generated) % len(SEEDED)]
        params["id"] = seed["tenant"]
        params[name] = seed[pick][len(generated) % len(seed[pick])]
    return case
