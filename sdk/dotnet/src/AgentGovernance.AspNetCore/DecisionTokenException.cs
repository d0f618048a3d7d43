namespace AgentGovernance.AspNetCore;

/// <summary>Why a decision token was refused (docs/security.md "Decision tokens"); the wire names are lower case with underscores.</summary>
public enum DecisionTokenProblem
{
    /// <summary><c>missing</c>: no token: the call did not come through the gateway.</summary>
    Missing,

    /// <summary><c>malformed</c>: not a token of the gateway's format.</summary>
    Malformed,

    /// <summary><c>unknown_key</c>: signed by a key the gateway's JWKS does not hold.</summary>
    UnknownKey,

    /// <summary><c>bad_signature</c>: the signature, or the claims under it, are not the gateway's.</summary>
    BadSignature,

    /// <summary><c>wrong_issuer</c>: issued by another gateway.</summary>
    WrongIssuer,

    /// <summary><c>expired</c>: past its minute (with the clock tolerance).</summary>
    Expired,

    /// <summary><c>wrong_request</c>: a valid token for another method, target or body.</summary>
    WrongRequest,
}

/// <summary>A decision token that proves no decision for the request at hand.</summary>
public sealed class DecisionTokenException : Exception
{
    /// <summary>Creates the exception.</summary>
    public DecisionTokenException(DecisionTokenProblem problem, string message)
        : base(message)
    {
        Problem = problem;
    }

    /// <summary>Creates the exception (for serializers; the problem is malformed).</summary>
    public DecisionTokenException()
        : this(DecisionTokenProblem.Malformed, "Malformed decision token")
    {
    }

    /// <summary>Creates the exception (for serializers; the problem is malformed).</summary>
    public DecisionTokenException(string message)
        : this(DecisionTokenProblem.Malformed, message)
    {
    }

    /// <summary>Creates the exception (for serializers; the problem is malformed).</summary>
    public DecisionTokenException(string message, Exception innerException)
        : base(message, innerException)
    {
        Problem = DecisionTokenProblem.Malformed;
    }

    /// <summary>Why it was refused.</summary>
    public DecisionTokenProblem Problem { get; }

    /// <summary>The problem as refusals name it (<c>missing</c>, <c>wrong_request</c>, ...).</summary>
    public string ProblemName => NameOf(Problem);

    /// <summary>The wire name of <paramref name="problem"/>.</summary>
    public static string NameOf(DecisionTokenProblem problem) => problem switch
    {
        DecisionTokenProblem.Missing => "missing",
        DecisionTokenProblem.Malformed => "malformed",
        DecisionTokenProblem.UnknownKey => "unknown_key",
        DecisionTokenProblem.BadSignature => "bad_signature",
        DecisionTokenProblem.WrongIssuer => "wrong_issuer",
        DecisionTokenProblem.Expired => "expired",
        _ => "wrong_request",
    };
}
