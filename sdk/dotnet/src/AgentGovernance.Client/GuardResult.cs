namespace AgentGovernance;

/// <summary>What <see cref="IGovernanceClient.GuardAsync{T}"/> answers: the call's value, or a soft denial (the call did not run).</summary>
/// <typeparam name="T">The call's result type.</typeparam>
public sealed class GuardResult<T>
{
    /// <summary>A result made under <paramref name="decision"/>: the call's <paramref name="value"/>, or default when denied.</summary>
    public GuardResult(PolicyDecision decision, T? value)
    {
        ArgumentNullException.ThrowIfNull(decision);
        Decision = decision;
        Value = value;
    }

    /// <summary>The decision the call was made under.</summary>
    public PolicyDecision Decision { get; }

    /// <summary>True when a policy denied the call (and ThrowOnDenied was false): it did not run.</summary>
    public bool IsDenied => !Decision.IsAllowed;

    /// <summary>The call's value; default when denied.</summary>
    public T? Value { get; }
}
