using System.Diagnostics;
using System.Text.RegularExpressions;
using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// The README's worked example (sdk/dotnet/README.md, "Worked example"), compiled from the
/// README by AgentGovernance.ReadmeExample, run with the README's appsettings.json against a
/// gateway with the demo policies (config/policies.yaml): an example that says what the gateway
/// does not do fails here, one that no longer compiles fails the build.
/// </summary>
public sealed partial class ReadmeExampleTests : IAsyncLifetime
{
    private const string Notes = "Buy milk; call Ada about the Q3 report.\n";
    private GatewayProcess? gateway;
    private readonly string workDirectory = Directory.CreateTempSubdirectory("agentgov-readme-").FullName;

    private GatewayProcess Gateway => gateway ?? throw new InvalidOperationException("the gateway has not started");

    public async Task InitializeAsync() => gateway = await GatewayProcess.StartAsync(Path.Combine(RepositoryRoot.Find(), "config", "policies.yaml"));

    public async Task DisposeAsync()
    {
        if (gateway is not null) await gateway.DisposeAsync();
        Directory.Delete(workDirectory, recursive: true);
    }

    [Fact]
    public async Task The_worked_example_runs_against_the_demo_policies_and_prints_what_the_README_says()
    {
        var agentId = await Gateway.CreateAgentAsync("notes", "verified");
        await File.WriteAllTextAsync(Path.Combine(workDirectory, "notes.txt"), Notes);
        await File.WriteAllTextAsync(Path.Combine(workDirectory, "appsettings.json"), ReadmeAppSettings());

        // The deployment's own values over the README's appsettings.json, as the environment
        // overrides it in any host: the gateway's address, the agent, the key; and the host's
        // console log on stderr, so stdout holds what the example prints.
        var (code, output, errors) = await RunExampleAsync(new Dictionary<string, string>
        {
            ["Logging__Console__LogToStandardErrorThreshold"] = "Trace",
            ["AgentGovernance__GatewayUrl"] = Gateway.Url.ToString(),
            ["AgentGovernance__GrpcAddress"] = Gateway.GrpcAddress,
            ["AgentGovernance__AgentId"] = agentId,
            ["AgentGovernance__ApiKey"] = await Gateway.CreateApiKeyAsync("readme-example"),
            ["AgentGovernance__AuditWalPath"] = Path.Combine(workDirectory, "audit.wal"),
        });

        Assert.True(code == 0, $"the example exited with {code}: {errors}");
        Assert.Equal(
            [Notes.TrimEnd('\n'), "", "not allowed: Access to system files blocked (file-plugin-reads, rule system-paths)", ""],
            output.Split('\n'));
        var outcome = Assert.Single(await Gateway.WaitForOutcomesAsync(agentId, 1));
        Assert.Equal("FilePlugin.ReadFile", outcome.GetProperty("action").GetString());
        Assert.Equal($"returned string of {Notes.Length} characters", outcome.GetProperty("details").GetProperty("resultSummary").GetString());
    }

    /// <summary>The ```json block under "## Worked example" in the README.</summary>
    private static string ReadmeAppSettings()
    {
        var readme = File.ReadAllText(Path.Combine(RepositoryRoot.Find(), "sdk", "dotnet", "README.md"));
        var section = readme.Split("\n## ").FirstOrDefault(part => part.StartsWith("Worked example", StringComparison.Ordinal)) ?? "";
        var block = JsonBlock().Match(section);
        Assert.True(block.Success, "README.md has no ```json block under \"## Worked example\"");
        return block.Groups[1].Value;
    }

    private async Task<(int Code, string Output, string Errors)> RunExampleAsync(Dictionary<string, string> environment)
    {
        var example = Path.Combine(AppContext.BaseDirectory.Replace("AgentGovernance.Tests", "AgentGovernance.ReadmeExample", StringComparison.Ordinal), "AgentGovernance.ReadmeExample.dll");
        Assert.True(File.Exists(example), $"{example} is missing (built with the tests)");
        var start = new ProcessStartInfo("dotnet", [example])
        {
            WorkingDirectory = workDirectory,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var (name, value) in environment) start.Environment[name] = value;
        using var process = Process.Start(start)!;
        var output = process.StandardOutput.ReadToEndAsync();
        var errors = process.StandardError.ReadToEndAsync();
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(90));
        await process.WaitForExitAsync(timeout.Token);
        return (process.ExitCode, await output, await errors);
    }

    [GeneratedRegex("```json\\n(.*?)```", RegexOptions.Singleline)]
    private static partial Regex JsonBlock();
}
