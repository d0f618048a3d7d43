import { useState } from 'react';

/** Copies `text` to the clipboard, saying whether it worked (clipboard access needs https or localhost). */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [outcome, setOutcome] = useState<'copied' | 'failed' | null>(null);
  const copy = () => {
    if (!navigator.clipboard) return setOutcome('failed');
    navigator.clipboard.writeText(text).then(
      () => setOutcome('copied'),
      () => setOutcome('failed'),
    );
  };
  return (
    <>
      <button type="button" onClick={copy}>
        {label}
      </button>
      <span role="status" className="copy-outcome">
        {outcome === 'copied' && 'Copied to the clipboard.'}
        {outcome === 'failed' && 'The browser refused the clipboard: select the text and copy it.'}
      </span>
    </>
  );
}
