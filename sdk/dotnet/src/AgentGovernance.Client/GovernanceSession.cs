namespace AgentGovernance;

/// <summary>
/// The session of the governed calls of one flow (a conversation, a request): every check made
/// in the flow, however deep (a Semantic Kernel filter, a call the model makes), names it, over
/// <see cref="AgentGovernanceOptions.SessionId"/>. Policies remember what a session did
/// (docs/policies.md "Sessions"). A session id is the caller's claim: for a protection an agent
/// must not escape, label the agent itself (<c>scope: agent</c>).
/// </summary>
public static class GovernanceSession
{
    /// <summary>The longest session id the gateway takes.</summary>
    public const int MaxLength = 128;

    private static readonly AsyncLocal<string?> Ambient = new();

    /// <summary>The session named for the current flow, or null.</summary>
    public static string? Current => Ambient.Value;

    /// <summary>
    /// Names <paramref name="sessionId"/> as the session of the calls made in this flow until the
    /// returned scope is disposed (then the session named before applies again).
    /// </summary>
    /// <exception cref="ArgumentException">The id is not 1 to 128 characters of <c>A-Z a-z 0-9 . _ : -</c>.</exception>
    public static IDisposable Use(string sessionId)
    {
        ArgumentNullException.ThrowIfNull(sessionId);
        if (!IsValid(sessionId)) throw new ArgumentException(Rule("sessionId"), nameof(sessionId));
        var scope = new Scope(Ambient.Value);
        Ambient.Value = sessionId;
        return scope;
    }

    internal static bool IsValid(string sessionId)
    {
        if (sessionId.Length is 0 or > MaxLength) return false;
        foreach (var character in sessionId)
        {
            if (!char.IsAsciiLetterOrDigit(character) && character is not ('.' or '_' or ':' or '-')) return false;
        }
        return true;
    }

    internal static string Rule(string name) => $"{name} must be 1 to {MaxLength} characters of A-Z a-z 0-9 . _ : -";

    private sealed class Scope(string? previous) : IDisposable
    {
        private bool disposed;

        public void Dispose()
        {
            if (disposed) return;
            disposed = true;
            Ambient.Value = previous;
        }
    }
}
