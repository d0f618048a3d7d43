import { useId, type ReactNode } from 'react';

/**
 * A label above its control, joined by id: the control's accessible name is the label alone
 * (a label wrapped around a select would also read out the chosen option).
 */
export function Field({ label, className, children }: { label: string; className?: string; children: (id: string) => ReactNode }) {
  const id = useId();
  return (
    <div className={`field-box${className ? ` ${className}` : ''}`}>
      <label htmlFor={id}>{label}</label>
      {children(id)}
    </div>
  );
}
