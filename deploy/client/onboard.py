"""Onboards a tenant through a Python client generated from the served OpenAPI document
(openapi-python-client), as a platform's backend would, and checks every answer.

`just api-contract` generates the client into a temporary directory as the package
`doorman_admin_client` and runs this with it on the PYTHONPATH:

    python3 onboard.py http://127.0.0.1:PORT dmk_…

Exits non-zero, saying which step, when an answer is not the one the document promises.
"""

import sys
import time
import uuid

from doorman_admin_client import AuthenticatedClient
from doorman_admin_client.api.agents import get_agent, remove_agent, set_agent
from doorman_admin_client.api.audit import list_audit_entries
from doorman_admin_client.api.events import list_events
from doorman_admin_client.api.keys import create_key, list_keys, revoke_key
from doorman_admin_client.api.replays import get_replay_job, replay_event
from doorman_admin_client.api.tenants import create_tenant, delete_tenant, get_tenant, list_tenants, rename_tenant
from doorman_admin_client.api.workspaces import link_workspace, list_workspaces
from doorman_admin_client.models import (
    AgentDoc,
    EventStatus,
    NewAgent,
    NewKey,
    NewTenant,
    NewWorkspace,
    Problem,
    ReplayJobDoc,
    ReplayOne,
    ReplayReport,
    TenantChange,
    TenantDoc,
)


def expect(step, response, status, kind=None):
    """The answer to `step` had `status` (and, parsed, is a `kind`); returns what was parsed."""
    if response.status_code != status or (kind is not None and not isinstance(response.parsed, kind)):
        sys.exit(f"{step}: expected {status} {kind.__name__ if kind else ''}, got "
                 f"{int(response.status_code)} {response.content[:300]!r}")
    return response.parsed


def main(base_url, key):
    client = AuthenticatedClient(base_url=base_url, token=key, raise_on_unexpected_status=True)
    name = f"Generated client {uuid.uuid4().hex[:8]}"
    team = "T" + uuid.uuid4().hex[:10].upper()

    created = expect("create the tenant", create_tenant.sync_detailed(
        client=client, body=NewTenant(name=name), idempotency_key=f"onboard-{team}"), 201, TenantDoc)
    again = expect("create it again under the same Idempotency-Key", create_tenant.sync_detailed(
        client=client, body=NewTenant(name=name), idempotency_key=f"onboard-{team}"), 201, TenantDoc)
    assert again.id == created.id, (again.id, created.id)
    reused = expect("another name under the same Idempotency-Key", create_tenant.sync_detailed(
        client=client, body=NewTenant(name=name + " bis"), idempotency_key=f"onboard-{team}"), 422, Problem)
    assert reused.type_.endswith("idempotency-key-reused"), reused.type_
    tenant = created.id

    expect("link its workspace", link_workspace.sync_detailed(
        tenant, client=client, body=NewWorkspace(team_id=team)), 201)
    links = expect("list its workspaces", list_workspaces.sync_detailed(tenant, client=client), 200)
    assert [w.team_id for w in links.items] == [team], links

    none = expect("its agent before one is set", get_agent.sync_detailed(tenant, client=client), 200, AgentDoc)
    assert none.url is None and not none.signing_secret_set, none
    expect("set its agent", set_agent.sync_detailed(tenant, client=client, body=NewAgent(
        url="https://agent.example/slack", signing_secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")), 200, AgentDoc)
    agent = expect("read its agent back", get_agent.sync_detailed(tenant, client=client), 200, AgentDoc)
    assert agent.url == "https://agent.example/slack" and agent.signing_secret_set and not agent.paused, agent

    # A replay of one event, its body left out (optional), then as a dry run.
    job = expect("replay an event without a body", replay_event.sync_detailed(
        tenant, "EvGeneratedClient", client=client), 202, ReplayJobDoc)
    deadline = time.monotonic() + 10
    while job.state.value != "finished":
        if time.monotonic() > deadline:
            sys.exit(f"the replay job never finished: {job}")
        time.sleep(0.05)
        job = expect("read the replay job", get_replay_job.sync_detailed(tenant, job.id, client=client), 200,
                     ReplayJobDoc)
    assert [e.outcome.value for e in job.events] == ["unknown"], job
    dry = expect("dry-run a replay", replay_event.sync_detailed(
        tenant, "EvGeneratedClient", client=client, body=ReplayOne(dry_run=True)), 200, ReplayReport)
    assert dry.dry_run and dry.selected == 1, dry

    renamed = expect("rename it", rename_tenant.sync_detailed(
        tenant, client=client, body=TenantChange(name=name + " Inc")), 200, TenantDoc)
    assert renamed.name == name + " Inc", renamed
    assert expect("read it", get_tenant.sync_detailed(tenant, client=client), 200, TenantDoc).name == renamed.name

    # Its portal's key, scoped to it: sees it and nothing else.
    made = expect("make a key scoped to it", create_key.sync_detailed(
        client=client, body=NewKey(name="portal", tenant_id=tenant, read_only=True)), 201)
    scoped = AuthenticatedClient(base_url=base_url, token=made.key)
    page = expect("list tenants with the scoped key", list_tenants.sync_detailed(client=scoped), 200)
    assert [t.id for t in page.items] == [tenant], page
    expect("list its events with the scoped key", list_events.sync_detailed(
        tenant, client=scoped, state=EventStatus.FAILED), 200)
    expect("remove its agent with the read-only key", remove_agent.sync_detailed(tenant, client=scoped), 403, Problem)
    expect("list keys with the scoped key", list_keys.sync_detailed(client=scoped), 403, Problem)
    expect("revoke the scoped key", revoke_key.sync_detailed(made.id, client=client), 204)
    expect("use the revoked key", list_tenants.sync_detailed(client=scoped), 401, Problem)

    # Offboarded: gone, its workspace free, the audit trail keeps what happened.
    gone = expect("delete it", delete_tenant.sync_detailed(tenant, client=client), 200)
    assert gone.tenant_id == tenant, gone
    expect("read it after its deletion", get_tenant.sync_detailed(tenant, client=client), 404, Problem)
    audit = expect("its audit trail", list_audit_entries.sync_detailed(client=client, tenant=tenant, limit=100), 200)
    entries = audit.items
    assert all(entry.tenant_id == tenant for entry in entries), entries
    actions = {str(entry.action.value) for entry in entries}
    for action in ("tenant.create", "workspace.link", "agent.set", "tenant.rename", "tenant.delete"):
        assert action in actions, (action, sorted(actions))
    print(f"a generated client onboarded and offboarded tenant {tenant} ({len(entries)} audit entries kept)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
