/**
 * The modules the shell and its pages share. Every page imports this file, and so does the shell: with
 * esbuild's code splitting (which splits by the set of entry points that reach a file), that puts all of
 * them in one shared file loaded with the shell, rather than in many small files whose separate gzip
 * costs more bytes (scripts/build-web.mjs counts the dashboard's budget in gzipped bytes of all files).
 */
import './api.js';
import './client.js';
import './router.js';
import './ui.js';
import './pages/roles.js';
import './pages/embed.js';
import './inbox.js';
import './lazy.js';
import './live-socket.js';
import './logo.js';
import './session.js';
import './storage-lock.js';
import './pages/organizations.js';
import './pages/sign-in.js';
// The inbox, where everyone lands after signing in, comes with the first load too.
import './pages/inbox.js';
