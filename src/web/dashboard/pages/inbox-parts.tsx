/** Small pieces shared by the inbox list and the conversation view: names, avatars, badges and times. */
import type { Conversation, ConversationStatus } from '../api.js';
import type { LiveState } from '../live-socket.js';

/**
 * How a visitor is called: `metadata.name` or `metadata.email` when the chat request set them, else
 * "Visitor" and the last four characters of the conversation id (stable, and enough to tell apart).
 */
export function visitorName(c: Conversation): string {
  for (const field of ['name', 'email'] as const) {
    const v = c.metadata[field];
    if (typeof v === 'string' && v.trim() !== '') return v.trim().slice(0, 80);
  }
  return `Visitor ${c.id.slice(-4).toUpperCase()}`;
}

/** How many avatar colours styles.css defines (`.avatar[data-hue]`, each with white text at 4.5:1 or more). */
const HUE_COUNT = 8;

/** A round avatar with the name's initials, its colour picked from the name. */
export function Avatar({ name }: { name: string }) {
  // FNV-1a over the UTF-16 units; the low bits of FNV vary least, so the colour comes from higher ones.
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  const words = name.split(/\s+/).filter((w) => w !== '');
  const initials = (words.length > 1 ? words[0]![0]! + words[1]![0]! : name.slice(0, 2)).toUpperCase();
  return <span class="avatar" aria-hidden="true" data-hue={(h >>> 11) % HUE_COUNT}>{initials}</span>;
}

const STATUS: Record<ConversationStatus, { label: string; tone: string }> = {
  pending_handoff: { label: 'Waiting', tone: 'waiting' },
  handed_off: { label: 'With a person', tone: 'person' },
  active: { label: 'Agent', tone: 'agent' },
  closed: { label: 'Closed', tone: 'closed' },
};

/** The label of a status: "Waiting", "With a person", "Agent", "Closed". */
export function statusLabel(s: ConversationStatus): string {
  return STATUS[s].label;
}

export function StatusBadge({ status }: { status: ConversationStatus }) {
  const s = STATUS[status];
  return <span class={`status status-${s.tone}`} data-status={status}>{s.label}</span>;
}

/** Whether the live connection is up, for sighted users and (politely) for screen readers. */
export function LiveBadge({ state, reason }: { state: LiveState; reason: string | null }) {
  const text = state === 'live' ? 'Live' : state === 'connecting' ? 'Connecting…' : state === 'reconnecting' ? 'Reconnecting…' : 'Offline';
  return (
    <span class={`live live-${state}`} role="status" title={reason ?? undefined} data-live={state}>
      <span class="live-dot" aria-hidden="true" />{text}
    </span>
  );
}

const clock = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
const day = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const full = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A message time: the clock time today, else the date; `long` gives date and time. */
export function timeOf(iso: string, long = false): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  if (long) return full.format(d);
  return d.toDateString() === new Date().toDateString() ? clock.format(d) : day.format(d);
}

/** How long ago, short: "now", "4m", "2h", "3d", else the date. */
export function ago(iso: string, now = Date.now()): string {
  const s = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (Number.isNaN(s)) return '';
  if (s < 60) return 'now';
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  if (s < 7 * 86_400) return `${Math.floor(s / 86_400)}d`;
  return day.format(new Date(iso));
}
