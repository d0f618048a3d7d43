import { ApiError } from '../api';

/** An error as a message the admin can act on: never a blank page. */
export function ErrorMessage({ error, title }: { error: Error; title?: string }) {
  const policyErrors = error instanceof ApiError ? error.policyErrors : [];
  return (
    <div className="message message-error" role="alert">
      {title && <strong>{title}: </strong>}
      <span>{error.message}</span>
      {error instanceof ApiError && error.status === 0 && <span> Check that the gateway is running and reachable.</span>}
      {policyErrors.length > 0 && (
        <ul className="policy-errors">
          {policyErrors.map((item, index) => (
            <li key={index}>
              line {item.line}, column {item.column}
              {item.policy ? ` (policy ${item.policy}${item.rule ? `, rule ${item.rule}` : ''})` : ''}: {item.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
