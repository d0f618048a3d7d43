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
            options.AuditFlushInterval = TimeSpan.FromSeconds(3600);
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

    [Fact]
    public async Task Two_processes_of_one_app_run_at_once_each_on_its_own_default_file()
    {
        var dataHome = Path.Combine(clients.WalDirectory, "data-home");
        using var first = StartAuditWriter("-", "send", dataHome);
        using var second = StartAuditWriter("-", "send", dataHome);

        var answers = await Task.WhenAll(first.StandardOutput.ReadToEndAsync(), second.StandardOutput.ReadToEndAsync(), first.StandardError.ReadToEndAsync(), second.StandardError.ReadToEndAsync()).WaitAsync(TimeSpan.FromSeconds(60));
        await Task.WhenAll(first.WaitForExitAsync(), second.WaitForExitAsync());

        Assert.True(first.ExitCode == 0 && second.ExitCode == 0, $"{first.ExitCode} {answers[2]} / {second.ExitCode} {answers[3]}");
        Assert.Equal(("sent\n", "sent\n"), (answers[0], answers[1]));
        Assert.Equal(2 * Events, (await fixture.Gateway.WaitForOutcomesAsync(agentId, 2 * Events)).Count);
        var files = Directory.GetFiles(Path.Combine(dataHome, "agentgov"), "*.wal").Select(Path.GetFileName).Order().ToList();
        Assert.Equal([$"audit-{agentId}-{first.Id}-0.wal", $"audit-{agentId}-{second.Id}-0.wal"], files.Order());
    }

    [Fact]
    public async Task A_process_takes_over_what_a_dead_process_of_the_app_left_in_its_default_file()
    {
        var dataHome = Path.Combine(clients.WalDirectory, "data-home");
        int deadId;
        using (var dead = StartAuditWriter("-", "kill", dataHome, gatewayUrl: new Uri($"http://127.0.0.1:{GatewayProcess.FreePort()}")))
        {
            deadId = dead.Id;
            Assert.Equal("written", await dead.StandardOutput.ReadLineAsync().WaitAsync(TimeSpan.FromSeconds(60)));
            dead.Kill();
            await dead.WaitForExitAsync();
        }
        var left = Path.Combine(dataHome, "agentgov", $"audit-{agentId}-{deadId}-0.wal");
        Assert.Equal(Events, File.ReadAllLines(left).Length);

        using var next = StartAuditWriter("-", "send", dataHome, count: 0);
        Assert.Equal("sent", await next.StandardOutput.ReadLineAsync().WaitAsync(TimeSpan.FromSeconds(60)));
        await next.WaitForExitAsync();

        Assert.Equal(Events, (await fixture.Gateway.WaitForOutcomesAsync(agentId, Events)).Count);
        Assert.False(File.Exists(left));
    }

    [Fact]
    public async Task Several_keyed_clients_of_one_agent_in_one_app_each_have_their_own_default_file()
    {
        var dataHome = Path.Combine(clients.WalDirectory, "data-home");
        using var app = StartAuditWriter("-", "keyed", dataHome);

        Assert.Equal("sent", await app.StandardOutput.ReadLineAsync().WaitAsync(TimeSpan.FromSeconds(60)));
        await app.WaitForExitAsync();

        Assert.Equal(0, app.ExitCode);
        var outcomes = await fixture.Gateway.WaitForOutcomesAsync(agentId, 2 * Events);
        Assert.Equal(Events, outcomes.Count(entry => entry.GetProperty("details").GetProperty("resultSummary").GetString()!.StartsWith("a ", StringComparison.Ordinal)));
        Assert.Equal(Events, outcomes.Count(entry => entry.GetProperty("details").GetProperty("resultSummary").GetString()!.StartsWith("b ", StringComparison.Ordinal)));
    }

    /// <summary>
    /// A process of an app on this agent (AgentGovernance.AuditWriter): <paramref name="walPath"/>
    /// "-" for the default file, under <paramref name="dataHome"/> as its LocalApplicationData.
    /// </summary>
    private Process StartAuditWriter(string walPath, string mode = "kill", string? dataHome = null, Uri? gatewayUrl = null, int count = Events)
    {
        var writer = Path.Combine(AppContext.BaseDirectory.Replace("AgentGovernance.Tests", "AgentGovernance.AuditWriter", StringComparison.Ordinal), "AgentGovernance.AuditWriter.dll");
        Assert.True(File.Exists(writer), $"{writer} is missing (built with the tests)");
        var start = new ProcessStartInfo("dotnet", [writer, (gatewayUrl ?? fixture.Gateway.Url).ToString(), fixture.ApiKey, agentId, walPath, count.ToString(System.Globalization.CultureInfo.InvariantCulture), mode])
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        if (dataHome is not null) start.Environment["XDG_DATA_HOME"] = dataHome;
        return Process.Start(start)!;
    }
}

internal static class OptionsExtensions
{
    public static AgentGovernanceOptions With(this AgentGovernanceOptions options, string walPath, double? flushSeconds = null)
    {
        options.AuditWalPath = walPath;
        if (flushSeconds is { } seconds) options.AuditFlushInterval = TimeSpan.FromSeconds(seconds);
        return options;
    }
}
