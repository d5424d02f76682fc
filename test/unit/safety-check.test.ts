import { describe, expect, it } from 'vitest';
import { checkSafety, DEFAULT_SAFETY, type SafetySettings } from '../../src/moderation/safety-check.js';

const redact = (text: string) => checkSafety(text, DEFAULT_SAFETY);
const withPhrases = (blocked_phrases: string[]): SafetySettings => ({ ...DEFAULT_SAFETY, blocked_phrases });

describe('DEFAULT_SAFETY', () => {
  it('has no phrases, redacts PII and a polite blocked message', () => {
    expect(DEFAULT_SAFETY).toEqual({
      blocked_phrases: [],
      redact_pii: true,
      blocked_message: "I'm sorry, I can't help with that.",
    });
  });
});

describe('checkSafety: nothing found', () => {
  it('does not fire on ordinary text', () => {
    expect(redact('Streams let you process data piece by piece. See chapter 12, page 345.')).toEqual({ fired: false });
  });

  it('does not fire when redaction is off', () => {
    expect(checkSafety('mail me at a@example.com', { ...DEFAULT_SAFETY, redact_pii: false })).toEqual({ fired: false });
  });
});

describe('checkSafety: card numbers', () => {
  it('redacts Luhn-valid numbers, plain, spaced or dashed', () => {
    for (const card of ['4111111111111111', '5555 5555 5555 4444', '4242-4242-4242-4242', '378282246310005']) {
      const v = redact(`My card is ${card}, thanks.`);
      expect(v).toEqual({
        fired: true,
        blocked: false,
        text: 'My card is [redacted card number], thanks.',
        findings: [{ kind: 'card_number', count: 1 }],
      });
    }
  });

  it('keeps a Luhn-invalid 16-digit number', () => {
    expect(redact('Order 4111111111111112 has shipped.')).toEqual({ fired: false });
    expect(redact('Order 4111 1111 1111 1112 has shipped.')).toEqual({ fired: false });
  });

  it('keeps digit runs longer than 19 digits and short numbers', () => {
    expect(redact('Tracking 41111111111111110000000 and 4111 1111 and 12345')).toEqual({ fired: false });
  });
});

describe('checkSafety: e-mail addresses', () => {
  it('redacts each address and counts them', () => {
    const v = redact('Write to jane.doe+kb@example.co.uk or OPS@corp-mail.io.');
    expect(v).toEqual({
      fired: true,
      blocked: false,
      text: 'Write to [redacted email] or [redacted email].',
      findings: [{ kind: 'email', count: 2 }],
    });
  });

  it('does not take a bare @handle for an address', () => {
    expect(redact('Ping @support on chat.')).toEqual({ fired: false });
  });
});

describe('checkSafety: secrets', () => {
  const a = (n: number) => 'A1b2C3d4E5'.repeat(Math.ceil(n / 10)).slice(0, n);
  const secrets: Record<string, string> = {
    'stripe sk_': 'sk_live_' + a(24),
    'openai sk-': 'sk-proj-' + a(40),
    'pk_live_': 'pk_live_' + a(24),
    'rk_': 'rk_live_' + a(24),
    'github ghp_': 'ghp_' + a(36),
    'github gho_': 'gho_' + a(36),
    'github_pat_': 'github_pat_11' + a(20) + '_' + a(59),
    'aws access key id': 'AKIA' + 'IOSFODNN7EXAMPLE',
    'slack xoxb-': 'xoxb-123456789012-1234567890123-' + a(24),
    'slack xoxp-': 'xoxp-' + a(30),
    jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.' + 'SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
  };
  for (const [kind, secret] of Object.entries(secrets)) {
    it(`redacts ${kind}`, () => {
      const v = redact(`use ${secret} here`);
      expect(v).toEqual({
        fired: true,
        blocked: false,
        text: 'use [redacted secret] here',
        findings: [{ kind: 'api_key', count: 1 }],
      });
    });
  }

  it('keeps short look-alikes', () => {
    expect(redact('the sk_test flag, ghp_abc, AKIA123 and task_manager_v2 are fine')).toEqual({ fired: false });
  });

  it('reports every kind found, in order', () => {
    const v = redact(`a@b.com 4111111111111111 sk_live_${a(24)}`);
    expect(v).toEqual({
      fired: true,
      blocked: false,
      text: '[redacted email] [redacted card number] [redacted secret]',
      findings: [
        { kind: 'email', count: 1 },
        { kind: 'card_number', count: 1 },
        { kind: 'api_key', count: 1 },
      ],
    });
  });
});

describe('checkSafety: blocked phrases', () => {
  it('matches case-insensitively and wins over redaction', () => {
    const v = checkSafety('Contact a@b.com about the SECRET Plan now', withPhrases(['secret plan']));
    expect(v).toEqual({
      fired: true,
      blocked: true,
      text: "I'm sorry, I can't help with that.",
      findings: [{ kind: 'blocked_phrase', count: 1 }],
    });
  });

  it('does not fire inside another word', () => {
    expect(checkSafety('This class is about classes and passes.', withPhrases(['ass']))).toEqual({ fired: false });
    expect(checkSafety('Well, ass.', withPhrases(['ass']))).toMatchObject({ fired: true, blocked: true });
  });

  it('matches on NFKC-normalised text, across invisible characters and any whitespace', () => {
    const s = withPhrases(['bad word']);
    expect(checkSafety('a ｂａｄ　ｗｏｒｄ here', s)).toMatchObject({ fired: true, blocked: true });
    expect(checkSafety('a b\u200Bad\n word here', s)).toMatchObject({ fired: true, blocked: true });
  });

  it('uses the configured blocked message and counts hits; ignores blank phrases', () => {
    const s: SafetySettings = { blocked_phrases: ['  ', 'foo'], redact_pii: false, blocked_message: 'Nope.' };
    expect(checkSafety('foo, Foo and FOO', s)).toEqual({
      fired: true,
      blocked: true,
      text: 'Nope.',
      findings: [{ kind: 'blocked_phrase', count: 3 }],
    });
    expect(checkSafety('food', s)).toEqual({ fired: false });
    expect(checkSafety('anything', { ...s, blocked_phrases: ['', ' '] })).toEqual({ fired: false });
  });

  it('treats regex metacharacters in phrases literally', () => {
    const s = withPhrases(['c++ (beta)', 'a.b']);
    expect(checkSafety('try c++ (beta) now', s)).toMatchObject({ fired: true, blocked: true });
    expect(checkSafety('axb', s)).toEqual({ fired: false });
  });
});
