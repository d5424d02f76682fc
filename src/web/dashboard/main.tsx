/**
 * Entry point of the dashboard bundle (scripts/build-web.mjs): renders the app into #app and resumes a
 * stored session, if any.
 */
import { render } from 'preact';
import { App } from './app.js';
import { Session } from './session.js';

const session = new Session();
const root = document.getElementById('app')!;
root.replaceChildren();
render(<App session={session} />, root);
void session.start();
