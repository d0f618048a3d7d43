using System.Diagnostics;
using System.IO.Compression;
using System.Text;
using System.Text.RegularExpressions;
using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// The packages as a team gets them: packed with <c>dotnet pack</c> into a local feed, then a
/// fresh console app made by the install lines of the README the packages carry, its worked
/// example as Program.cs, built against the packages only and run against a gateway with the
/// demo policies. Also what the packages hold: that README, LICENSE, symbols, the repository and commit,
/// and no folder of the machine that built them.
/// </summary>
[Collection(AloneGroup.Name)]
public sealed partial class PackageTests : IAsyncLifetime
{
    private const string Notes = "Buy milk; call Ada about the Q3 report.\n";
    private const string RepositoryUrl = "https://example.invalid/agent-governance.git";
    private static readonly string[] Packages = ["AgentGovernance.Client", "AgentGovernance.SemanticKernel", "AgentGovernance.AspNetCore"];
    private readonly string root = RepositoryRoot.Find();
    private readonly string work = Directory.CreateTempSubdirectory("agentgov-package-").FullName;
    private GatewayProcess? gateway;

    private string Feed => Path.Combine(work, "feed");

    public async Task InitializeAsync()
    {
        gateway = await GatewayProcess.StartAsync(Path.Combine(root, "config", "policies.yaml"));
        foreach (var package in Packages)
        {
            await RunAsync(root, "dotnet", ["pack", Path.Combine("sdk", "dotnet", "src", package), "-c", "Release", "-o", Feed, $"-p:RepositoryUrl={RepositoryUrl}", "-p:ContinuousIntegrationBuild=true"]);
        }
    }

    public async Task DisposeAsync()
    {
        if (gateway is not null) await gateway.DisposeAsync();
        try
        {
            Directory.Delete(work, recursive: true);
        }
        catch (IOException)
        {
            // temporary
        }
    }

    [Fact]
    public void Each_package_carries_the_users_README_its_LICENSE_its_symbols_the_repository_and_no_build_folder()
    {
        var readme = File.ReadAllText(Path.Combine(root, "sdk", "dotnet", "PACKAGE.md"));
        var commit = Git("rev-parse", "HEAD");
        foreach (var package in Packages)
        {
            using var nupkg = ZipFile.OpenRead(Path.Combine(Feed, $"{package}.0.1.0.nupkg"));
            Assert.Equal(readme, Read(nupkg, "README.md"));
            var nuspec = Read(nupkg, $"{package}.nuspec");
            Assert.Contains($"<repository type=\"git\" url=\"{RepositoryUrl}\"", nuspec, StringComparison.Ordinal);
            Assert.Contains($"commit=\"{commit}\"", nuspec, StringComparison.Ordinal);
            Assert.Contains("<readme>README.md</readme>", nuspec, StringComparison.Ordinal);
            Assert.Contains("<license type=\"file\">LICENSE</license>", nuspec, StringComparison.Ordinal);
            Assert.Equal(File.ReadAllText(Path.Combine(root, "sdk", "dotnet", "LICENSE")), Read(nupkg, "LICENSE"));
            var dll = Encoding.UTF8.GetString(ReadBytes(nupkg, $"lib/net10.0/{package}.dll"));
            Assert.DoesNotContain(root, dll, StringComparison.Ordinal);
            Assert.Contains("/_/sdk/dotnet/src/", dll, StringComparison.Ordinal);
            using var snupkg = ZipFile.OpenRead(Path.Combine(Feed, $"{package}.0.1.0.snupkg"));
            Assert.Contains(snupkg.Entries, entry => entry.FullName == $"lib/net10.0/{package}.pdb");
        }
    }

    [Fact]
    public async Task A_fresh_console_app_made_by_the_package_READMEs_install_lines_runs_its_worked_example()
    {
        string readme;
        using (var nupkg = ZipFile.OpenRead(Path.Combine(Feed, "AgentGovernance.SemanticKernel.0.1.0.nupkg"))) readme = Read(nupkg, "README.md");
        var install = Block(readme, "Install", "sh");
        var example = Block(readme, "Worked example", "csharp");
        // The example the packages show is the one the repository's README shows (and the suite compiles).
        Assert.Equal(Block(File.ReadAllText(Path.Combine(root, "sdk", "dotnet", "README.md")), "Worked example", "csharp"), example);
        // The local feed beside the registry, and a package folder of the test's own, so that the
        // packages come from the feed and not from a copy restored earlier.
        var packages = Path.Combine(work, "packages");
        await File.WriteAllTextAsync(Path.Combine(work, "nuget.config"), $"""
            <?xml version="1.0" encoding="utf-8"?>
            <configuration>
              <packageSources><add key="agentgov" value="{Feed}" /></packageSources>
              <config><add key="globalPackagesFolder" value="{packages}" /></config>
              <fallbackPackageFolders><add key="machine" value="{Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.UserProfile), ".nuget", "packages")}" /></fallbackPackageFolders>
            </configuration>
            """);

        var folder = work;
        foreach (var command in install.Split('\n').SelectMany(line => line.Split("&&")).Select(command => command.Split('#')[0].Trim()).Where(command => command.Length > 0))
        {
            var words = command.Split(' ', StringSplitOptions.RemoveEmptyEntries);
            if (words[0] == "cd") folder = Path.Combine(folder, words[1]);
            else await RunAsync(folder, words[0], words[1..]);
        }
        await File.WriteAllTextAsync(Path.Combine(folder, "Program.cs"), example);
        await File.WriteAllTextAsync(Path.Combine(folder, "appsettings.json"), Block(readme, "Worked example", "json"));
        await File.WriteAllTextAsync(Path.Combine(folder, "notes.txt"), Notes);
        await RunAsync(folder, "dotnet", ["build"]);
        Assert.True(Directory.Exists(Path.Combine(packages, "agentgovernance.semantickernel", "0.1.0")), "AgentGovernance.SemanticKernel was not restored from the feed");

        var agentId = await gateway!.CreateAgentAsync("notes", "verified");
        var output = await RunAsync(folder, "dotnet", ["run", "--no-build"], new Dictionary<string, string>
        {
            ["Logging__Console__LogToStandardErrorThreshold"] = "Trace",
            ["AgentGovernance__GatewayUrl"] = gateway.Url.ToString(),
            ["AgentGovernance__GrpcAddress"] = gateway.GrpcAddress,
            ["AgentGovernance__AgentId"] = agentId,
            ["AgentGovernance__ApiKey"] = await gateway.CreateApiKeyAsync("package-example"),
            ["AgentGovernance__AuditWalPath"] = Path.Combine(work, "audit.wal"),
        });

        Assert.Equal([Notes.TrimEnd('\n'), "", "not allowed: Access to system files blocked (file-plugin-reads, rule system-paths)", ""], output.Split('\n'));
        Assert.Single(await gateway.WaitForOutcomesAsync(agentId, 1));
    }

    /// <summary>The first ```<paramref name="language"/> block of the section <paramref name="heading"/> (its heading's first words).</summary>
    private static string Block(string markdown, string heading, string language)
    {
        var section = markdown.Split("\n## ").FirstOrDefault(part => part.StartsWith(heading, StringComparison.Ordinal)) ?? "";
        var block = Regex.Match(section, $"```{language}\\n(.*?)```", RegexOptions.Singleline);
        Assert.True(block.Success, $"no ```{language} block under \"## {heading}\"");
        return block.Groups[1].Value;
    }

    private static string Read(ZipArchive archive, string name) => Encoding.UTF8.GetString(ReadBytes(archive, name));

    private static byte[] ReadBytes(ZipArchive archive, string name)
    {
        var entry = archive.GetEntry(name) ?? throw new InvalidOperationException($"{name} is not in the package");
        using var stream = entry.Open();
        using var bytes = new MemoryStream();
        stream.CopyTo(bytes);
        return bytes.ToArray();
    }

    private string Git(params string[] arguments)
    {
        var start = new ProcessStartInfo("git", arguments) { WorkingDirectory = root, RedirectStandardOutput = true, UseShellExecute = false };
        using var process = Process.Start(start)!;
        var output = process.StandardOutput.ReadToEnd().Trim();
        process.WaitForExit();
        return output;
    }

    /// <summary>Runs a command to its end (at most 5 minutes) and answers its standard output; one that fails fails the test with what it printed.</summary>
    private static async Task<string> RunAsync(string folder, string program, string[] arguments, Dictionary<string, string>? environment = null)
    {
        var start = new ProcessStartInfo(program, arguments)
        {
            WorkingDirectory = folder,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.Environment["DOTNET_NOLOGO"] = "1";
        start.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        foreach (var (name, value) in environment ?? []) start.Environment[name] = value;
        using var process = Process.Start(start)!;
        var output = process.StandardOutput.ReadToEndAsync();
        var errors = process.StandardError.ReadToEndAsync();
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(5));
        await process.WaitForExitAsync(timeout.Token);
        Assert.True(process.ExitCode == 0, $"{program} {string.Join(' ', arguments)} exited with {process.ExitCode}: {await output}\n{await errors}");
        return await output;
    }
}

/// <summary>Tests that pack and build (minutes of both cores): run after the others, alone, so no gateway of theirs starts starved.</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class AloneGroup
{
    public const string Name = "alone";
}
