using System.Text.Json;
using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// The shared cases of sdk/fixtures/decision-cases.json `unreachable`, as the Python and
/// TypeScript SDKs run them: nothing listens at either address (a closed loopback port, or a host
/// name under .invalid, which never resolves), over gRPC and the HTTP fallback alike. Fail-closed
/// throws <see cref="GatewayUnavailableException"/> whatever ThrowOnDenied says and records
/// nothing (no call happened); fail-open allows, saying so in one audit event per check.
/// </summary>
public sealed class UnreachableCasesTests : IAsyncLifetime
{
    private const string UnresolvableHost = "agentgov-unreachable.invalid";
    private static readonly DecisionCases Shared = DecisionCases.Load(RepositoryRoot.Find());
    private readonly Clients clients = new();

    public static TheoryData<string> UnreachableCases() => [.. Shared.Unreachable.Select(shared => shared.Check.Name)];

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await clients.DisposeAsync();

    [Theory]
    [MemberData(nameof(UnreachableCases))]
    public async Task A_check_with_no_gateway_at_the_address_runs_the_call_only_under_fail_open(string name)
    {
        var shared = Shared.Unreachable.Single(each => each.Check.Name == name);
        var check = shared.Check;
        var (gatewayUrl, grpcAddress, cause) = shared.Address switch
        {
            "unresolvable" => (new Uri($"http://{UnresolvableHost}:3000"), $"{UnresolvableHost}:50051", UnresolvableHost),
            "closed-port" => ClosedPorts(),
            _ => throw new InvalidOperationException($"unknown address kind {shared.Address}"),
        };
        var client = clients.Create(new AgentGovernanceOptions
        {
            GatewayUrl = gatewayUrl,
            GrpcAddress = grpcAddress,
            ApiKey = "agk_nobody_listens",
            AgentId = "agent_unreachable",
            Timeout = TimeSpan.FromSeconds(shared.TimeoutSeconds),
            FailureMode = shared.FailureMode == "fail-open" ? FailureMode.FailOpen : FailureMode.FailClosed,
            ThrowOnDenied = shared.ThrowOnDenied,
            CacheEnabled = false,
            AuditFlushInterval = TimeSpan.FromSeconds(3600),
        });

        PolicyDecision? decision = null;
        Exception? thrown = null;
        try
        {
            decision = await client.CheckAsync(check.Plugin, check.Function, check.Args, check.Context);
        }
        catch (AgentGovernanceException error)
        {
            thrown = error;
        }
        if (shared.Throws)
        {
            // Not a timeout and not a denial: the SDK's unavailable error, naming what it could not reach.
            var unavailable = Assert.IsType<GatewayUnavailableException>(thrown);
            Assert.Contains(cause, unavailable.Message, StringComparison.Ordinal);
        }
        else
        {
            Assert.Null(thrown);
            Assert.Equal((true, "allow", DecisionSource.FailOpen, false), (decision!.IsAllowed, decision.Decision, decision.Source, decision.Enforced));
        }
        Assert.Equal(shared.AuditEvents, client.PendingAuditCount);

        var ran = false;
        GuardResult<string>? guarded = null;
        thrown = null;
        try
        {
            guarded = await client.GuardAsync(check.Plugin, check.Function, check.Args, _ =>
            {
                ran = true;
                return Task.FromResult("ran");
            }, check.Context);
        }
        catch (AgentGovernanceException error)
        {
            thrown = error;
        }
        Assert.Equal(shared.Runs, ran);
        if (shared.Throws) Assert.IsType<GatewayUnavailableException>(thrown);
        else Assert.Equal("ran", guarded!.Value);
        Assert.Equal(shared.AuditEvents * 2, client.PendingAuditCount);
        if (shared.AuditEvents > 0)
        {
            var queued = JsonDocument.Parse(File.ReadLines(Path.Combine(clients.WalDirectory, "audit-0.wal")).Last()).RootElement.GetProperty("event");
            Assert.Equal("allow", queued.GetProperty("decision").GetString());
            Assert.StartsWith("fail-open: allowed without a gateway decision", queued.GetProperty("resultSummary").GetString(), StringComparison.Ordinal);
        }
    }

    private static (Uri GatewayUrl, string GrpcAddress, string Cause) ClosedPorts()
    {
        var http = GatewayProcess.FreePort();
        var grpc = GatewayProcess.FreePort();
        return (new Uri($"http://127.0.0.1:{http}"), $"127.0.0.1:{grpc}", $"127.0.0.1:{http}");
    }
}
