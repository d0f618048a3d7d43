namespace AgentGovernance;

/// <summary>What <see cref="IGovernanceClient.GuardAsync{T}"/> answers: the call's value, or a soft denial (the call did not run).</summary>
/// <typeparam name="T">The call's result type.</typeparam>
public sealed class GuardResult<T>
{
    internal GuardResult(PolicyDecision decision, T? value)
    {
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
