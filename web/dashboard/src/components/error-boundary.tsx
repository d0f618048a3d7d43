import { Component, type ErrorInfo, type ReactNode } from 'react';
import { ErrorMessage } from './error-message';

interface State {
  error: Error | null;
}

/** A page that fails to render shows the error, not a blank page; the rest of the dashboard stays usable. */
export class ErrorBoundary extends Component<{ children: ReactNode; resetKey: string }, State> {
  override state: State = { error: null };

  static getDerivedStateFromError(error: Error): State {
    return { error };
  }

  override componentDidCatch(error: Error, info: ErrorInfo): void {
    console.error(error, info.componentStack);
  }

  override componentDidUpdate(previous: { resetKey: string }): void {
    if (previous.resetKey !== this.props.resetKey && this.state.error) this.setState({ error: null });
  }

  override render(): ReactNode {
    if (this.state.error) return <ErrorMessage error={this.state.error} title="This page failed" />;
    return this.props.children;
  }
}
