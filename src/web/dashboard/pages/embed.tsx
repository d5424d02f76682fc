/** The embed tag of a published agent (the widget's contract, docs/operator-console.md) and its copy box. */
import { useRef, useState } from 'preact/hooks';
import { StatusMessage } from '../ui.js';

/**
 * The tag a website puts in its pages to show the chat widget of the agent published under `publicKey`:
 * `<script src="<parley origin>/widget.js" data-public-key="pk_..." async></script>`. The widget script is
 * served by Parley itself, so the origin is the dashboard's own.
 */
export function embedTag(publicKey: string, origin: string = location.origin): string {
  return `<script src="${origin}/widget.js" data-public-key="${publicKey}" async></script>`;
}

/**
 * Copies `text` to the clipboard; where the Clipboard API is refused (plain HTTP on another host than
 * localhost), selects `field` and uses the older copy command. The sentence to show.
 */
export async function copyText(text: string, field: HTMLTextAreaElement | null): Promise<string> {
  try {
    await navigator.clipboard.writeText(text);
    return 'Copied to the clipboard.';
  } catch {
    field?.select();
    return document.execCommand('copy') ? 'Copied to the clipboard.' : 'Copying did not work: the tag is selected, copy it with Ctrl+C or ⌘C.';
  }
}

/** The embed tag of agent `name` in a read-only box labelled “Embed tag of “name””, with a Copy button. */
export function EmbedBox({ id, name, publicKey }: { id: string; name: string; publicKey: string }) {
  const label = `Embed tag of “${name}”`;
  const field = useRef<HTMLTextAreaElement>(null);
  const [copied, setCopied] = useState('');
  const tag = embedTag(publicKey);
  return (
    <div class="embed">
      <label for={id} class="embed-label">{label}</label>
      <div class="copy-row">
        <textarea id={id} ref={field} readOnly rows={2} value={tag} class="secret" spellcheck={false} autocomplete="off"
          onFocus={(e) => e.currentTarget.select()} />
        <button type="button" class="btn" aria-label={`Copy the embed tag of “${name}”`} onClick={async () => setCopied(await copyText(tag, field.current))}>Copy</button>
      </div>
      <StatusMessage message={copied} />
    </div>
  );
}
