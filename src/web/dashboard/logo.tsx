/** The Parley mark and name, drawn inline (no image request, nothing from elsewhere). */
export function Logo({ compact = false }: { compact?: boolean }) {
  return (
    <span class={compact ? 'logo logo-compact' : 'logo'}>
      <svg viewBox="0 0 32 32" width="28" height="28" aria-hidden="true" focusable="false">
        <rect width="32" height="32" rx="8" class="logo-tile" />
        <path d="M9 10.5A2.5 2.5 0 0 1 11.5 8h9a2.5 2.5 0 0 1 2.5 2.5v7a2.5 2.5 0 0 1-2.5 2.5H15l-4.2 3.4A.5.5 0 0 1 10 23v-3h-.5A.5.5 0 0 1 9 19.5z" class="logo-bubble" />
      </svg>
      <span class="logo-name">Parley</span>
    </span>
  );
}
