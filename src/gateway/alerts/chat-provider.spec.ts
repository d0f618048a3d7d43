import { Alert, testAlert } from './alert';
import { CHAT_LIMITS, chatMessage } from './chat-provider';

const ORIGIN = { instance: 'gw', environment: 'test' };

interface Block {
  type: string;
  text?: { type: string; text: string };
  fields?: Array<{ type: string; text: string }>;
  elements?: Array<{ type: string; text: string }>;
}

/** Every mrkdwn text of a chat message, the fallback `text` included. */
function mrkdwnTexts(message: Record<string, unknown>): string[] {
  const [attachment] = message.attachments as Array<{ blocks: Block[] }>;
  const texts = [message.text as string];
  for (const block of attachment.blocks) {
    for (const item of [block.text, ...(block.fields ?? []), ...(block.elements ?? [])]) if (item?.type === 'mrkdwn') texts.push(item.text);
  }
  return texts;
}

function blocks(message: Record<string, unknown>): Block[] {
  return (message.attachments as Array<{ blocks: Block[] }>)[0].blocks;
}

describe('chat message', () => {
  const plain = testAlert(0);

  it('escapes &, < and > in every agent-controlled text, so no mention or link reaches Slack', () => {
    const injected = '<!channel>|<https://evil.example|Click> & <@U123>';
    const alert: Alert = {
      ...plain,
      title: `Request denied ${injected}`,
      message: `denied read:etc/${injected}`,
      entry: { ...plain.entry, action: `read:etc/${injected}`, path: `/etc/${injected}`, agentName: injected, policyName: injected, reason: `*bold* ${injected}`, traceId: injected },
    };
    const texts = mrkdwnTexts(chatMessage(alert, ORIGIN));
    for (const text of texts) expect(text).not.toMatch(/[<>]/);
    const joined = texts.join('\n');
    expect(joined).toContain('&lt;!channel&gt;|&lt;https://evil.example|Click&gt; &amp; &lt;@U123&gt;');
    expect(joined).not.toMatch(/&(?!amp;|lt;|gt;)/);
  });

  it('keeps every block under Slack limits, marking what was cut', () => {
    const long = `${'p'.repeat(3990)}&<>`;
    const alert: Alert = { ...plain, title: 'T'.repeat(400), message: `denied ${long}${long}`, entry: { ...plain.entry, path: `/etc/${long}`, action: `read:${long}`, reason: 'r'.repeat(5000) } };
    const [header, section, fields] = blocks(chatMessage(alert, ORIGIN));
    expect(header.text!.text.length).toBeLessThanOrEqual(CHAT_LIMITS.header);
    expect(header.text!.text).toMatch(/… \(truncated\)$/);
    expect(section.text!.text.length).toBeLessThanOrEqual(CHAT_LIMITS.sectionText);
    expect(section.text!.text).toMatch(/p… \(truncated\)$/);
    for (const field of fields.fields!) expect(field.text.length).toBeLessThanOrEqual(CHAT_LIMITS.field);
    expect(fields.fields!.find((field) => field.text.startsWith('*Reason*'))!.text).toMatch(/r… \(truncated\)$/);
  });

  it('never cuts inside an escape', () => {
    // `&` escapes to five characters: put one across the field limit.
    const prefix = '*Action*\n'.length;
    const alert: Alert = { ...plain, entry: { ...plain.entry, action: `${'a'.repeat(CHAT_LIMITS.field - prefix - 15)}${'&'.repeat(200)}` } };
    const action = blocks(chatMessage(alert, ORIGIN))[2].fields!.find((field) => field.text.startsWith('*Action*'))!.text;
    expect(action).toMatch(/(a|&amp;)… \(truncated\)$/);
    expect(action.length).toBeLessThanOrEqual(CHAT_LIMITS.field);
  });

  it('leaves ordinary text as it is', () => {
    const texts = mrkdwnTexts(chatMessage(plain, ORIGIN)).join('\n');
    expect(texts).toContain('*Action*\ntest:alert');
    expect(texts).toContain('*Request*\nPOST /test');
  });
});
