/**
 * The widget preview of a published agent (`/dashboard/preview?agent=agt_...`): its embed tag, and a
 * sample web page that embeds the widget with that tag (`/preview/{public_key}`, served by Parley with a
 * policy that lets the widget run: see src/transport/static/widget-preview.ts), in a frame. The dashboard
 * itself cannot run the widget: its policy forbids adding scripts at run time.
 */
import '../shared.js';
import { useEffect, useState } from 'preact/hooks';
import type { Agent, Organization } from '../api.js';
import { linkTo, pathOf, useLocation } from '../router.js';
import type { Session } from '../session.js';
import { ErrorAlert, messageOf, PageTitle } from '../ui.js';
import { EmbedBox } from './embed.js';

export function PreviewPage({ session, org }: { session: Session; org: Organization }) {
  const { search } = useLocation();
  const agentId = new URLSearchParams(search).get('agent') ?? '';
  const [agent, setAgent] = useState<Agent | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    setAgent(null);
    setError(null);
    if (!/^agt_[0-9A-Za-z]{1,64}$/.test(agentId)) {
      setError('Choose an agent to preview on the Agents page.');
      return;
    }
    session.request<Agent>('GET', `/v1/agents/${encodeURIComponent(agentId)}`).then(setAgent, (err: unknown) => setError(messageOf(err)));
  }, [session, agentId, org.id]);

  return (
    <>
      <div class="page-head">
        <div>
          <PageTitle>Widget preview{agent !== null ? ` · ${agent.name}` : ''}</PageTitle>
          <p class="muted">A sample page of your website with the chat widget, exactly as the embed tag below shows it.</p>
        </div>
        <a class="btn" href={pathOf('agents')} onClick={linkTo('agents')}>Back to agents</a>
      </div>
      <ErrorAlert message={error} />
      {agent !== null && (!agent.published || agent.public_key === null) && (
        <div class="notice">“{agent.name}” is not published, so no website can show its chat. Publish it on the Agents page first.</div>
      )}
      {agent !== null && agent.published && agent.public_key !== null && (
        <div class="stack">
          <EmbedBox id="preview-embed" name={agent.name} publicKey={agent.public_key} />
          <div class="preview-frame">
            <div class="preview-chrome" aria-hidden="true"><span /><span /><span /><code>{location.origin}/preview/{agent.public_key.slice(0, 10)}…</code></div>
            <iframe src={`/preview/${agent.public_key}`} title={`Sample page with the chat widget of ${agent.name}`} />
          </div>
          <p class="small muted"><a href={`/preview/${agent.public_key}`} target="_blank" rel="noopener">Open the sample page in a new tab</a></p>
        </div>
      )}
    </>
  );
}
