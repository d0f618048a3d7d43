using System.Diagnostics;
using System.Diagnostics.Metrics;
using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// The client as .NET code expects one (README "Options", "Telemetry", "Lifecycle"): handlers of
/// the application's own for both transports, an ActivitySource and a Meter, and a synchronous
/// Dispose that waits on nothing and loses nothing.
/// </summary>
[Collection(GatewayTestGroup.Name)]
public sealed class ClientIdiomsTests(GatewayFixture fixture) : IAsyncLifetime
{
    private readonly Clients clients = new();
    private string agentId = "";

    public async Task InitializeAsync() => agentId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-idioms", "verified", "finance");

    public async Task DisposeAsync() => await clients.DisposeAsync();

    private static Dictionary<string, object?> Path(string path) => new() { ["path"] = path };

    [Fact]
    public async Task The_HTTP_transport_sends_through_the_handler_the_application_gives()
    {
        using var counting = new CountingHandler(new SocketsHttpHandler());
        var options = clients.OptionsFor(fixture, agentId);
        options.HttpHandler = counting;
        options.GrpcAddress = $"127.0.0.1:{GatewayProcess.FreePort()}";   // nothing listens: checks go over HTTP
        var client = clients.Create(options);

        var decision = await client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/notes.txt"));
        await client.AuditAsync(new AuditRecord { PluginName = "FilePlugin", FunctionName = "ReadFile", Allowed = true, DecisionId = decision.DecisionId });
        Assert.True(await client.FlushAuditAsync());

        Assert.Equal(DecisionSource.Http, decision.Source);
        Assert.Contains("POST /v1/check", counting.Requests);
        Assert.Contains("POST /v1/audit", counting.Requests);
    }

    [Fact]
    public async Task The_gRPC_channel_takes_the_options_the_application_sets()
    {
        using var counting = new CountingHandler(new SocketsHttpHandler { EnableMultipleHttp2Connections = true });
        var options = clients.OptionsFor(fixture, agentId);
        options.ConfigureGrpcChannel = channel => channel.HttpHandler = counting;
        var client = clients.Create(options);

        var decision = await client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/notes.txt"));

        Assert.Equal(DecisionSource.Grpc, decision.Source);
        Assert.Contains("POST /agentgov.pdp.v1.PolicyDecisionPoint/Evaluate", counting.Requests);
    }

    [Fact]
    public async Task Each_check_is_an_activity_of_the_AgentGovernance_source_and_counted_by_its_meter()
    {
        var activities = new List<Activity>();
        using var tracing = new ActivityListener
        {
            ShouldListenTo = source => source.Name == GovernanceTelemetry.SourceName,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = activity => { lock (activities) activities.Add(activity); },
        };
        ActivitySource.AddActivityListener(tracing);
        var checks = new List<(long Count, Dictionary<string, object?> Tags)>();
        var durations = new List<double>();
        using var metrics = new MeterListener
        {
            InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == GovernanceTelemetry.MeterName) listener.EnableMeasurementEvents(instrument);
            },
        };
        metrics.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            if (instrument.Name != GovernanceTelemetry.ChecksCounter) return;
            var named = new Dictionary<string, object?>();
            foreach (var tag in tags) named[tag.Key] = tag.Value;
            lock (checks) checks.Add((value, named));
        });
        metrics.SetMeasurementEventCallback<double>((instrument, value, _, _) =>
        {
            if (instrument.Name == GovernanceTelemetry.CheckDurationHistogram) lock (durations) durations.Add(value);
        });
        metrics.Start();
        var client = clients.Create(clients.OptionsFor(fixture, agentId).Also(options => options.ThrowOnDenied = false));

        var denied = await client.CheckAsync("FilePlugin", "ReadFile", Path("/etc/passwd"));

        Activity check;
        lock (activities) check = Assert.Single(activities, activity => activity.GetTagItem(GovernanceTelemetry.DecisionIdTag) as string == denied.DecisionId);
        Assert.Equal(GovernanceTelemetry.CheckActivity, check.OperationName);
        Assert.Equal(("FilePlugin", "ReadFile", "deny", "grpc", "block-sensitive-files"), (
            check.GetTagItem(GovernanceTelemetry.PluginTag), check.GetTagItem(GovernanceTelemetry.FunctionTag), check.GetTagItem(GovernanceTelemetry.DecisionTag),
            check.GetTagItem(GovernanceTelemetry.SourceTag), check.GetTagItem(GovernanceTelemetry.PolicyTag)));
        lock (checks)
        {
            var counted = Assert.Single(checks, each => each.Tags[GovernanceTelemetry.FunctionTag] as string == "ReadFile" && each.Tags[GovernanceTelemetry.DecisionTag] as string == "deny");
            Assert.Equal(1, counted.Count);
        }
        lock (durations) Assert.Contains(durations, seconds => seconds > 0);
    }

    [Fact]
    public async Task Dispose_sends_nothing_and_leaves_the_queued_events_for_the_next_client_on_the_file()
    {
        var walPath = System.IO.Path.Combine(clients.WalDirectory, "sync-dispose.wal");
        await using var stalled = new StalledServer();
        var options = clients.OptionsFor(fixture, agentId);
        options.AuditWalPath = walPath;
        options.GatewayUrl = new Uri($"http://{stalled.Address}/");
        options.AuditFlushInterval = TimeSpan.FromHours(1);
        var client = new GovernanceClient(options);
        await client.AuditAsync(new AuditRecord { PluginName = "FilePlugin", FunctionName = "ReadFile", Allowed = true, ResultSummary = "sync dispose" });

        client.Dispose();

        // No send on the way out (a blocking Dispose would wait on one): the event waits in the file.
        Assert.Equal(0, stalled.Accepted);
        var next = clients.Create(clients.OptionsFor(fixture, agentId).Also(again => again.AuditWalPath = walPath));
        Assert.Equal(1, next.PendingAuditCount);
        Assert.True(await next.FlushAuditAsync());
        Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(agentId, 1), entry => entry.GetProperty("details").GetProperty("resultSummary").GetString() == "sync dispose");
    }

    /// <summary>Counts the requests a transport sends, as "METHOD /path".</summary>
    private sealed class CountingHandler(HttpMessageHandler inner) : DelegatingHandler(inner)
    {
        private readonly List<string> requests = [];

        public IReadOnlyList<string> Requests
        {
            get
            {
                lock (requests) return [.. requests];
            }
        }

        protected override Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            lock (requests) requests.Add($"{request.Method} {request.RequestUri!.AbsolutePath}");
            return base.SendAsync(request, cancellationToken);
        }
    }
}

internal static class ConfiguredOptions
{
    public static AgentGovernanceOptions Also(this AgentGovernanceOptions options, Action<AgentGovernanceOptions> configure)
    {
        configure(options);
        return options;
    }
}
