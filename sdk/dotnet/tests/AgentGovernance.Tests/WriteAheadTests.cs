using System.Diagnostics;
using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// The audit write-ahead file: events recorded by a client killed before it sent them reach the
/// gateway after a restart, each exactly once, even when they are sent again.
/// </summary>
[Collection(GatewayTestGroup.Name)]
public sealed class WriteAheadTests(GatewayFixture fixture) : IAsyncLifetime
{
    private const int Events = 25;
    private readonly Clients clients = new();
    private string agentId = "";

    public async Task InitializeAsync() => agentId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-wal");

    public async Task DisposeAsync() => await clients.DisposeAsync();

    private GovernanceClient ClientOn(string walPath, Action<AgentGovernanceOptions>? configure = null)
    {
        var options = clients.OptionsFor(fixture, agentId);
        options.AuditWalPath = walPath;
        configure?.Invoke(options);
        return clients.Create(options);
    }

    [Fact]
    public async Task Events_of_a_killed_client_are_sent_after_a_restart_each_exactly_once()
    {
        var walPath = Path.Combine(clients.WalDirectory, "audit.wal");
        using (var child = StartAuditWriter(walPath))
        {
            try
            {
                Assert.Equal("written", await child.StandardOutput.ReadLineAsync().WaitAsync(TimeSpan.FromSeconds(60)));
            }
            finally
            {
                child.Kill();
                await child.WaitForExitAsync();
            }
            Assert.Equal(137, child.ExitCode);
        }
        Assert.Equal(Events, File.ReadAllLines(walPath).Length);
        Assert.Empty(await fixture.Gateway.OutcomesAsync(agentId));
        var asWritten = walPath + ".as-written";
        File.Copy(walPath, asWritten);

        await using (var restarted = ClientOn(walPath))
        {
            Assert.True(await restarted.FlushAuditAsync());
        }
        var outcomes = await fixture.Gateway.WaitForOutcomesAsync(agentId, Events);
        Assert.Equal(Enumerable.Range(0, Events).Select(i => $"event {i}").Order(), outcomes.Select(entry => entry.GetProperty("details").GetProperty("resultSummary").GetString()).Order());
        Assert.Equal(0, new FileInfo(walPath).Length);

        // The acknowledgements lost too (a crash right after sending): everything goes again, and
        // the gateway's eventId idempotency keeps one entry per event.
        File.Copy(asWritten, walPath, overwrite: true);
        await using (var again = ClientOn(walPath))
        {
            Assert.True(await again.FlushAuditAsync());
        }
        outcomes = await fixture.Gateway.WaitForOutcomesAsync(agentId, Events);
        Assert.Equal(Events, outcomes.Count);
        Assert.Equal(Events, outcomes.Select(entry => entry.GetProperty("details").GetProperty("eventId").GetString()).Distinct().Count());
    }

    [Fact]
    public async Task A_torn_last_line_is_ignored_and_the_rest_is_sent()
    {
        var walPath = Path.Combine(clients.WalDirectory, "torn.wal");
        var eventId = $"torn-{Guid.NewGuid():N}";
        await File.WriteAllTextAsync(walPath,
            $$$"""{"event":{"eventId":"{{{eventId}}}","agentId":"{{{agentId}}}","plugin":"P","function":"f","arguments":{},"decision":"allow","durationMs":1}}""" + "\n" +
            """{"event":{"eventId":"torn-2","agen""");

        await using (var restarted = ClientOn(walPath))
        {
            Assert.True(await restarted.FlushAuditAsync());
        }

        var outcome = Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(agentId, 1));
        Assert.Equal(eventId, outcome.GetProperty("details").GetProperty("eventId").GetString());
    }

    [Fact]
    public async Task A_second_live_client_on_the_same_file_is_refused_and_the_file_is_free_again_after_dispose()
    {
        var walPath = Path.Combine(clients.WalDirectory, "shared.wal");
        var first = ClientOn(walPath);

        var refused = Assert.Throws<InvalidOperationException>(() => ClientOn(walPath));
        Assert.Contains("in use by another client", refused.Message, StringComparison.Ordinal);

        await first.DisposeAsync();
        await using var second = new GovernanceClient(clients.OptionsFor(fixture, agentId).With(walPath));
        Assert.Equal(0, second.PendingAuditCount);
    }

    [Fact]
    public async Task A_full_batch_goes_out_without_waiting_for_the_interval()
    {
        var client = ClientOn(Path.Combine(clients.WalDirectory, "batch.wal"), options =>
        {
            options.AuditBatchSize = 5;
            options.AuditFlushIntervalSeconds = 3600;
        });
        for (var index = 0; index < 4; index++) await client.AuditAsync(Record($"batched {index}"));
        await Task.Delay(500);
        Assert.Empty(await fixture.Gateway.OutcomesAsync(agentId));

        await client.AuditAsync(Record("batched 4"));

        Assert.Equal(5, (await fixture.Gateway.WaitForOutcomesAsync(agentId, 5)).Count);
    }

    [Fact]
    public async Task Disposing_a_client_sends_what_is_queued()
    {
        var walPath = Path.Combine(clients.WalDirectory, "dispose.wal");
        await using (var client = new GovernanceClient(clients.OptionsFor(fixture, agentId).With(walPath, flushSeconds: 3600)))
        {
            await client.AuditAsync(Record("sent on dispose"));
        }

        var outcome = Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(agentId, 1));
        Assert.Equal("sent on dispose", outcome.GetProperty("details").GetProperty("resultSummary").GetString());
        Assert.Equal(0, new FileInfo(walPath).Length);
    }

    private static AuditRecord Record(string summary) => new() { PluginName = "FilePlugin", FunctionName = "ReadFile", Allowed = true, Duration = TimeSpan.FromMilliseconds(1), ResultSummary = summary };

    private Process StartAuditWriter(string walPath)
    {
        var writer = Path.Combine(AppContext.BaseDirectory.Replace("AgentGovernance.Tests", "AgentGovernance.AuditWriter", StringComparison.Ordinal), "AgentGovernance.AuditWriter.dll");
        Assert.True(File.Exists(writer), $"{writer} is missing (built with the tests)");
        var start = new ProcessStartInfo("dotnet", [writer, fixture.Gateway.Url.ToString(), fixture.ApiKey, agentId, walPath, Events.ToString(System.Globalization.CultureInfo.InvariantCulture)])
        {
            RedirectStandardOutput = true,
            UseShellExecute = false,
        };
        return Process.Start(start)!;
    }
}

internal static class OptionsExtensions
{
    public static AgentGovernanceOptions With(this AgentGovernanceOptions options, string walPath, double? flushSeconds = null)
    {
        options.AuditWalPath = walPath;
        if (flushSeconds is { } seconds) options.AuditFlushIntervalSeconds = seconds;
        return options;
    }
}
