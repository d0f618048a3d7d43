using System.Globalization;
using System.Text.Json;
using AgentGov.Pdp.V1;
using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Grpc.Net.Client;
using PdpDecision = AgentGov.Pdp.V1.Decision;

namespace AgentGovernance.Internal;

/// <summary>The PDP over gRPC (proto/pdp.proto): Evaluate, the default transport, and Subscribe.</summary>
internal sealed class GrpcPdpTransport : IDisposable
{
    private readonly GrpcChannel channel;
    private readonly PolicyDecisionPoint.PolicyDecisionPointClient client;
    private readonly Metadata headers;
    private readonly Uri address;

    public GrpcPdpTransport(Uri address, string apiKey, TimeSpan maxReconnectBackoff, Action<GrpcChannelOptions>? configure)
    {
        this.address = address;
        var channelOptions = new GrpcChannelOptions
        {
            HttpHandler = new SocketsHttpHandler
            {
                EnableMultipleHttp2Connections = true,
                PooledConnectionIdleTimeout = Timeout.InfiniteTimeSpan,
                KeepAlivePingDelay = TimeSpan.FromSeconds(60),
                KeepAlivePingTimeout = TimeSpan.FromSeconds(30),
            },
            DisposeHttpClient = true,
            // The default (120 s) would keep a client on HTTP long after the gateway came back.
            MaxReconnectBackoff = maxReconnectBackoff,
        };
        configure?.Invoke(channelOptions);
        channel = GrpcChannel.ForAddress(address, channelOptions);
        client = new PolicyDecisionPoint.PolicyDecisionPointClient(channel);
        headers = new Metadata { { "x-api-key", apiKey } };
    }

    /// <summary>One Evaluate call with a deadline of <paramref name="timeout"/>.</summary>
    public async Task<PolicyDecision> EvaluateAsync(CheckRequest request, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var message = new PolicyRequest
        {
            AgentId = request.AgentId,
            Plugin = request.Plugin,
            Function = request.Function,
            Args = StructOf(request.Arguments),
            Context = StructOf(request.Context),
            TrustTier = request.TrustTier,
            ApprovalId = request.ApprovalId ?? "",
            SessionId = request.SessionId ?? "",
        };
        try
        {
            var answer = await client.EvaluateAsync(message, new Grpc.Core.CallOptions(headers, DateTime.UtcNow + timeout, cancellationToken)).ConfigureAwait(false);
            return DecisionOf(answer);
        }
        catch (RpcException error) when (error.StatusCode == StatusCode.DeadlineExceeded)
        {
            cancellationToken.ThrowIfCancellationRequested();
            throw new GatewayTimeoutException(string.Create(CultureInfo.InvariantCulture, $"gRPC Evaluate at {address.Authority}: no answer within {timeout.TotalSeconds:0.###} s"), error);
        }
        catch (RpcException error)
        {
            cancellationToken.ThrowIfCancellationRequested();
            throw ErrorOf(error);
        }
    }

    /// <summary>The organization's changes after <paramref name="sinceVersion"/>, then each new one; ends when <paramref name="cancellationToken"/> is cancelled.</summary>
    public AsyncServerStreamingCall<PolicyChangeEvent> Subscribe(long sinceVersion, CancellationToken cancellationToken) =>
        client.Subscribe(new PolicySubscription { SinceVersion = sinceVersion }, new Grpc.Core.CallOptions(headers, cancellationToken: cancellationToken));

    /// <summary>Waits until the channel is connected to the gateway.</summary>
    public Task ConnectAsync(CancellationToken cancellationToken) => channel.ConnectAsync(cancellationToken);

    public void Dispose() => channel.Dispose();

    /// <summary>The SDK's exception for a failed call; proto/pdp.proto names what each status means.</summary>
    public static Exception ErrorOf(RpcException error)
    {
        var rejection = error.StatusCode switch
        {
            StatusCode.Unauthenticated => GatewayRejection.Unauthenticated,
            StatusCode.InvalidArgument => GatewayRejection.InvalidArgument,
            StatusCode.NotFound => GatewayRejection.NotFound,
            StatusCode.PermissionDenied => GatewayRejection.PermissionDenied,
            StatusCode.ResourceExhausted => GatewayRejection.ResourceExhausted,
            _ => (GatewayRejection?)null,
        };
        if (rejection is { } code) return new GatewayRejectedException(code, error.Status.Detail, RetryAfterOf(error.Trailers.GetValue("retry-after")));
        if (error.StatusCode == StatusCode.DeadlineExceeded) return new GatewayTimeoutException($"gRPC: no answer within the deadline ({error.Status.Detail})", error);
        return new GatewayUnavailableException($"gRPC {error.StatusCode}: {error.Status.Detail}", cannotConnect: error.StatusCode == StatusCode.Unavailable, error);
    }

    /// <summary>Whole seconds from a <c>retry-after</c> trailer.</summary>
    public static TimeSpan? RetryAfterOf(string? value) =>
        long.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out var seconds) ? TimeSpan.FromSeconds(seconds) : null;

    private static PolicyDecision DecisionOf(PolicyResponse answer) => new()
    {
        IsAllowed = answer.Decision == PdpDecision.Allow,
        Reason = answer.Reason,
        Policy = answer.Policy,
        Rule = answer.Rule,
        PolicyVersion = answer.PolicyVersion,
        TraceId = answer.TraceId,
        DecisionId = answer.DecisionId,
        Cacheable = answer.Cacheable,
        CacheTtl = TimeSpan.FromMilliseconds(answer.CacheTtlMs),
        Enforced = answer.Enforced,
        Source = DecisionSource.Grpc,
        IsPending = answer.Decision == PdpDecision.Pending,
        ApprovalId = answer.Decision == PdpDecision.Pending ? answer.ApprovalId : "",
        ApprovalExpiresAt = answer.Decision == PdpDecision.Pending ? HttpPdpTransport.InstantOf(answer.ApprovalExpiresAt) : null,
    };

    private static Struct StructOf(IReadOnlyDictionary<string, JsonElement> values)
    {
        var message = new Struct();
        foreach (var (name, value) in values) message.Fields[name] = ValueOf(value);
        return message;
    }

    private static Value ValueOf(JsonElement element) => element.ValueKind switch
    {
        JsonValueKind.Object => Value.ForStruct(StructOf(element)),
        JsonValueKind.Array => Value.ForList([.. element.EnumerateArray().Select(ValueOf)]),
        JsonValueKind.String => Value.ForString(element.GetString()!),
        JsonValueKind.Number => Value.ForNumber(element.GetDouble()),
        JsonValueKind.True => Value.ForBool(true),
        JsonValueKind.False => Value.ForBool(false),
        _ => Value.ForNull(),
    };

    private static Struct StructOf(JsonElement element)
    {
        var message = new Struct();
        foreach (var property in element.EnumerateObject()) message.Fields[property.Name] = ValueOf(property.Value);
        return message;
    }
}
