using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace AgentGovernance.Tests.Support;

/// <summary>
/// A real gateway for the tests and the bench: <c>node dist/src/main.js</c> from the repository
/// root, as <c>npm start</c> runs it (build it first with <c>npm run build</c>), on free ports,
/// with the shared policies of sdk/fixtures/decision-cases.json (or a policies file of the
/// test's choosing, such as the demo policies config/policies.yaml). On a throwaway database on
/// DATABASE_URL's server when that is set, else on embedded PGlite in a temporary DATA_DIR.
/// It can be stopped and started again on the same ports and data, as a gateway restarts.
/// </summary>
public sealed class GatewayProcess : IAsyncDisposable
{
    public const string AdminToken = "sdk-dotnet-test-admin-token-0123456789";
    private const string MetricsToken = "sdk-dotnet-test-metrics-token-0123456789";

    private readonly string repositoryRoot;
    private readonly string dataDirectory;
    private readonly string? scratchDatabase;
    private readonly string? policiesFile;
    private readonly IReadOnlyDictionary<string, string> environment;
    private readonly HttpClient admin;
    private Process? process;

    private GatewayProcess(string repositoryRoot, int port, int grpcPort, string dataDirectory, string? scratchDatabase, string? policiesFile, IReadOnlyDictionary<string, string>? environment)
    {
        this.repositoryRoot = repositoryRoot;
        this.policiesFile = policiesFile;
        this.environment = environment ?? new Dictionary<string, string>();
        Port = port;
        GrpcPort = grpcPort;
        this.dataDirectory = dataDirectory;
        this.scratchDatabase = scratchDatabase;
        admin = new HttpClient { BaseAddress = Url, Timeout = TimeSpan.FromSeconds(30) };
        admin.DefaultRequestHeaders.Add("x-admin-token", AdminToken);
    }

    public int Port { get; }

    public int GrpcPort { get; }

    public Uri Url => new($"http://127.0.0.1:{Port}/");

    public string GrpcAddress => $"127.0.0.1:{GrpcPort}";

    /// <summary>Whether the gateway uses PostgreSQL (DATABASE_URL) rather than embedded PGlite.</summary>
    public bool OnPostgres => scratchDatabase is not null;

    /// <summary>Starts a gateway (with the shared decision cases' policies unless <paramref name="policiesFile"/> names others) and waits for GET /health to answer 200.</summary>
    public static async Task<GatewayProcess> StartAsync(string? policiesFile = null, IReadOnlyDictionary<string, string>? environment = null)
    {
        var root = RepositoryRoot.Find();
        var main = Path.Combine(root, "dist", "src", "main.js");
        if (!File.Exists(main)) throw new InvalidOperationException($"{main} is missing: run `npm ci && npm run build` at the repository root ({root}) first");
        var dataDirectory = Directory.CreateTempSubdirectory("agentgov-sdk-dotnet-").FullName;
        var serverUrl = Environment.GetEnvironmentVariable("DATABASE_URL");
        var scratch = string.IsNullOrEmpty(serverUrl) ? null : await CreateDatabaseAsync(serverUrl);
        var gateway = new GatewayProcess(root, FreePort(), FreePort(), dataDirectory, scratch, policiesFile, environment);
        try
        {
            await gateway.StartAgainAsync();
            return gateway;
        }
        catch
        {
            await gateway.DisposeAsync();
            throw;
        }
    }

    /// <summary>Starts the gateway (again) on its ports and data.</summary>
    public async Task StartAgainAsync()
    {
        if (process is { HasExited: false }) return;
        var policies = Path.Combine(dataDirectory, "policies.yaml");
        await File.WriteAllTextAsync(policies, policiesFile is null ? DecisionCases.Load(repositoryRoot).Policies : await File.ReadAllTextAsync(policiesFile));
        var start = new ProcessStartInfo("node", [Path.Combine(repositoryRoot, "dist", "src", "main.js")])
        {
            WorkingDirectory = repositoryRoot,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.Environment.Clear();
        start.Environment["PATH"] = Environment.GetEnvironmentVariable("PATH") ?? "/usr/bin:/bin";
        start.Environment["PORT"] = Port.ToString(System.Globalization.CultureInfo.InvariantCulture);
        start.Environment["HOST"] = "127.0.0.1";
        start.Environment["PDP_GRPC_PORT"] = GrpcPort.ToString(System.Globalization.CultureInfo.InvariantCulture);
        start.Environment["ADMIN_TOKEN"] = AdminToken;
        start.Environment["POLICIES_FILE"] = policies;
        start.Environment["DATA_DIR"] = dataDirectory;
        start.Environment["AUDIT_FLUSH_MS"] = "10";
        start.Environment["LOG_LEVEL"] = "error";
        start.Environment["METRICS_TOKEN"] = MetricsToken;
        if (scratchDatabase is not null) start.Environment["DATABASE_URL"] = scratchDatabase;
        foreach (var (name, value) in environment) start.Environment[name] = value;
        var output = new StringBuilder();
        process = new Process { StartInfo = start };
        process.OutputDataReceived += (_, line) => { lock (output) output.AppendLine(line.Data); };
        process.ErrorDataReceived += (_, line) => { lock (output) output.AppendLine(line.Data); };
        process.Start();
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        var deadline = Stopwatch.StartNew();
        while (true)
        {
            if (process.HasExited)
            {
                string text;
                lock (output) text = output.ToString();
                throw new InvalidOperationException($"the gateway exited with {process.ExitCode}: {text[Math.Max(0, text.Length - 2000)..]}");
            }
            try
            {
                using var health = await admin.GetAsync("health");
                if (health.StatusCode == HttpStatusCode.OK) return;
            }
            catch (HttpRequestException)
            {
                // not listening yet
            }
            if (deadline.Elapsed > TimeSpan.FromSeconds(180)) throw new InvalidOperationException("the gateway did not answer /health within 180 s (a machine this loaded starts it slowly)");
            await Task.Delay(100);
        }
    }

    /// <summary>Stops the gateway process (SIGTERM, then SIGKILL after 10 s); its data stays for a restart.</summary>
    public async Task StopAsync()
    {
        if (process is null) return;
        if (!process.HasExited)
        {
            _ = Kill(process.Id, 15);
            using var wait = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            try
            {
                await process.WaitForExitAsync(wait.Token);
            }
            catch (OperationCanceledException)
            {
                process.Kill(entireProcessTree: true);
                await process.WaitForExitAsync();
            }
        }
        process.Dispose();
        process = null;
    }

    public async ValueTask DisposeAsync()
    {
        await StopAsync();
        admin.Dispose();
        if (scratchDatabase is not null) await DropDatabaseAsync(scratchDatabase);
        try
        {
            Directory.Delete(dataDirectory, recursive: true);
        }
        catch (IOException)
        {
            // a temporary directory; the OS cleans it eventually
        }
    }

    public async Task<string> CreateAgentAsync(string name, string trustTier = "verified", params string[] tags)
    {
        using var response = await admin.PostAsJsonAsync("admin/agents", new { name = $"{name}-{Guid.NewGuid():N}"[..Math.Min(name.Length + 9, 60)], trustTier, tags });
        var body = await response.Content.ReadFromJsonAsync<JsonObject>();
        if (response.StatusCode != HttpStatusCode.Created) throw new InvalidOperationException($"POST /admin/agents: {(int)response.StatusCode} {body}");
        return (string)body!["id"]!;
    }

    /// <summary>An agent and its token (for <c>/proxy/*</c>: <c>Authorization: Bearer &lt;token&gt;</c>).</summary>
    public async Task<(string Id, string Token)> CreateAgentWithTokenAsync(string name, string trustTier = "trusted")
    {
        using var response = await admin.PostAsJsonAsync("admin/agents", new { name = $"{name}-{Guid.NewGuid():N}"[..Math.Min(name.Length + 9, 60)], trustTier });
        var body = await response.Content.ReadFromJsonAsync<JsonObject>();
        if (response.StatusCode != HttpStatusCode.Created) throw new InvalidOperationException($"POST /admin/agents: {(int)response.StatusCode} {body}");
        return ((string)body!["id"]!, (string)body["token"]!);
    }

    public async Task<string> CreateApiKeyAsync(string name = "sdk-dotnet")
    {
        using var response = await admin.PostAsJsonAsync("admin/api-keys", new { name });
        var body = await response.Content.ReadFromJsonAsync<JsonObject>();
        if (response.StatusCode != HttpStatusCode.Created) throw new InvalidOperationException($"POST /admin/api-keys: {(int)response.StatusCode} {body}");
        return (string)body!["key"]!;
    }

    public async Task PutPolicyAsync(string name, string yaml)
    {
        using var content = new StringContent(yaml, Encoding.UTF8, "application/yaml");
        using var response = await admin.PutAsync($"admin/policies/{name}", content);
        if (response.StatusCode is not (HttpStatusCode.OK or HttpStatusCode.Created)) throw new InvalidOperationException($"PUT /admin/policies/{name}: {(int)response.StatusCode} {await response.Content.ReadAsStringAsync()}");
    }

    public async Task DeletePolicyAsync(string name)
    {
        using var response = await admin.DeleteAsync($"admin/policies/{name}");
    }

    /// <summary>The organization's approvals (GET /admin/approvals), newest first; <paramref name="status"/> filters.</summary>
    public async Task<IReadOnlyList<JsonElement>> ApprovalsAsync(string? status = null)
    {
        using var response = await admin.GetAsync(status is null ? "admin/approvals" : $"admin/approvals?status={status}");
        var body = await response.Content.ReadFromJsonAsync<JsonElement>();
        if (response.StatusCode != HttpStatusCode.OK) throw new InvalidOperationException($"GET /admin/approvals: {(int)response.StatusCode} {body}");
        return [.. body.GetProperty("approvals").EnumerateArray()];
    }

    /// <summary>Approves or rejects an approval (POST /admin/approvals/:id/approve or /reject).</summary>
    public async Task DecideApprovalAsync(string approvalId, string verdict, string? comment = null)
    {
        using var response = await admin.PostAsJsonAsync($"admin/approvals/{approvalId}/{verdict}", comment is null ? new Dictionary<string, string>() : new Dictionary<string, string> { ["comment"] = comment });
        if (response.StatusCode != HttpStatusCode.OK) throw new InvalidOperationException($"POST /admin/approvals/{approvalId}/{verdict}: {(int)response.StatusCode} {await response.Content.ReadAsStringAsync()}");
    }

    /// <summary>Revokes the agent (DELETE /admin/agents/:id).</summary>
    public async Task RevokeAgentAsync(string agentId)
    {
        using var response = await admin.DeleteAsync($"admin/agents/{agentId}");
        if (response.StatusCode != HttpStatusCode.OK) throw new InvalidOperationException($"DELETE /admin/agents/{agentId}: {(int)response.StatusCode}");
    }

    /// <summary>The audit entries POST /v1/audit recorded for the agent (kind <c>outcome</c>, source <c>check</c>), newest first.</summary>
    public async Task<IReadOnlyList<JsonElement>> OutcomesAsync(string agentId)
    {
        using var response = await admin.GetAsync($"admin/audit?limit=1000&source=check&agentId={agentId}");
        var body = await response.Content.ReadFromJsonAsync<JsonElement>();
        if (response.StatusCode != HttpStatusCode.OK) throw new InvalidOperationException($"GET /admin/audit: {(int)response.StatusCode} {body}");
        return [.. body.GetProperty("entries").EnumerateArray().Where(entry => entry.GetProperty("kind").GetString() == "outcome")];
    }

    /// <summary>The agent's decision entries of <paramref name="action"/> (<c>Plugin.Function</c>), newest first: the gateway's own and those of decisions an SDK applied from its cache.</summary>
    public async Task<IReadOnlyList<JsonElement>> DecisionsAsync(string agentId, string action)
    {
        using var response = await admin.GetAsync($"admin/audit?limit=1000&agentId={agentId}&action={Uri.EscapeDataString(action)}");
        var body = await response.Content.ReadFromJsonAsync<JsonElement>();
        if (response.StatusCode != HttpStatusCode.OK) throw new InvalidOperationException($"GET /admin/audit: {(int)response.StatusCode} {body}");
        return [.. body.GetProperty("entries").EnumerateArray().Where(entry => entry.GetProperty("kind").GetString() == "decision")];
    }

    /// <summary>The decision entries once at least <paramref name="count"/> arrived, then a moment more (to see any extra).</summary>
    public async Task<IReadOnlyList<JsonElement>> WaitForDecisionsAsync(string agentId, string action, int count)
    {
        var deadline = Stopwatch.StartNew();
        IReadOnlyList<JsonElement> found;
        while ((found = await DecisionsAsync(agentId, action)).Count < count)
        {
            if (deadline.Elapsed > TimeSpan.FromSeconds(15)) throw new InvalidOperationException($"{found.Count} of {count} decision entries arrived");
            await Task.Delay(50);
        }
        await Task.Delay(300);
        return await DecisionsAsync(agentId, action);
    }

    /// <summary>How many <c>POST /v1/audit</c> requests the gateway has answered (its <c>agentgov_http_requests_total</c>).</summary>
    public async Task<double> AuditRequestsAsync()
    {
        using var request = new HttpRequestMessage(HttpMethod.Get, "metrics");
        request.Headers.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", MetricsToken);
        using var response = await admin.SendAsync(request);
        var text = await response.Content.ReadAsStringAsync();
        if (response.StatusCode != HttpStatusCode.OK) throw new InvalidOperationException($"GET /metrics: {(int)response.StatusCode}");
        return text.Split('\n')
            .Where(line => line.StartsWith("agentgov_http_requests_total{", StringComparison.Ordinal) && line.Contains("route=\"/v1/audit\"", StringComparison.Ordinal))
            .Sum(line => double.Parse(line[(line.LastIndexOf(' ') + 1)..], System.Globalization.CultureInfo.InvariantCulture));
    }

    /// <summary>The agent's outcomes once at least <paramref name="count"/> arrived, then a moment more (to see any extra).</summary>
    public async Task<IReadOnlyList<JsonElement>> WaitForOutcomesAsync(string agentId, int count, TimeSpan? timeout = null)
    {
        var deadline = Stopwatch.StartNew();
        IReadOnlyList<JsonElement> found;
        while ((found = await OutcomesAsync(agentId)).Count < count)
        {
            if (deadline.Elapsed > (timeout ?? TimeSpan.FromSeconds(15))) throw new InvalidOperationException($"{found.Count} of {count} audit outcomes arrived");
            await Task.Delay(50);
        }
        await Task.Delay(300);
        return await OutcomesAsync(agentId);
    }

    /// <summary>A port nothing listens on now.</summary>
    public static int FreePort()
    {
        using var probe = new TcpListener(IPAddress.Loopback, 0);
        probe.Start();
        return ((IPEndPoint)probe.LocalEndpoint).Port;
    }

    /// <summary>A throwaway database on DATABASE_URL's server, so this suite never shares org_default with another one.</summary>
    private static async Task<string> CreateDatabaseAsync(string serverUrl)
    {
        var name = $"agentgov_sdkdotnet_{Environment.ProcessId}_{DateTimeOffset.UtcNow.ToUnixTimeMilliseconds()}";
        var (code, output) = await PsqlAsync(serverUrl, $"CREATE DATABASE {name}");
        if (code != 0) throw new InvalidOperationException($"psql could not create {name} on DATABASE_URL's server: {output}");
        return $"{serverUrl[..serverUrl.LastIndexOf('/')]}/{name}";
    }

    private static async Task DropDatabaseAsync(string url)
    {
        var slash = url.LastIndexOf('/');
        await PsqlAsync($"{url[..slash]}/postgres", $"DROP DATABASE IF EXISTS {url[(slash + 1)..]} WITH (FORCE)");
    }

    private static async Task<(int Code, string Output)> PsqlAsync(string url, string command)
    {
        var start = new ProcessStartInfo("psql", [url, "-q", "-c", command]) { RedirectStandardOutput = true, RedirectStandardError = true };
        using var psql = Process.Start(start)!;
        var output = await psql.StandardError.ReadToEndAsync();
        await psql.WaitForExitAsync();
        return (psql.ExitCode, output);
    }

    [System.Runtime.InteropServices.DllImport("libc", EntryPoint = "kill")]
    private static extern int Kill(int pid, int signal);
}

/// <summary>The repository's root: the first folder above the test binaries holding proto/pdp.proto and package.json.</summary>
public static class RepositoryRoot
{
    public static string Find()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "proto", "pdp.proto")) && File.Exists(Path.Combine(directory.FullName, "package.json"))) return directory.FullName;
        }
        throw new InvalidOperationException($"no repository root (a folder with proto/pdp.proto and package.json) above {AppContext.BaseDirectory}");
    }
}

/// <summary>sdk/fixtures/decision-cases.json: the policies, agents and cases every SDK runs.</summary>
public sealed record DecisionCases(string Policies, IReadOnlyList<DecisionCases.Agent> Agents, IReadOnlyList<DecisionCases.SharedCase> Cases, IReadOnlyList<DecisionCases.CachedCase> CachedDenials, IReadOnlyList<DecisionCases.TimeoutCase> Timeouts, IReadOnlyList<DecisionCases.UnreachableCase> Unreachable)
{
    public static DecisionCases Load(string repositoryRoot)
    {
        using var document = JsonDocument.Parse(File.ReadAllText(Path.Combine(repositoryRoot, "sdk", "fixtures", "decision-cases.json")));
        var root = document.RootElement;
        return new DecisionCases(
            root.GetProperty("policies").GetString()!,
            [.. root.GetProperty("agents").EnumerateArray().Select(agent => new Agent(agent.GetProperty("name").GetString()!, agent.GetProperty("trustTier").GetString()!, [.. agent.GetProperty("tags").EnumerateArray().Select(tag => tag.GetString()!)]))],
            [.. root.GetProperty("cases").EnumerateArray().Select(SharedCase.Of)],
            [.. root.GetProperty("cachedDenials").EnumerateArray().Select(CachedCase.Of)],
            [.. root.GetProperty("timeouts").EnumerateArray().Select(TimeoutCase.Of)],
            [.. root.GetProperty("unreachable").EnumerateArray().Select(UnreachableCase.Of)]);
    }

    /// <summary>The same check made <see cref="Calls"/> times by one client, its cache on: every application of the decision on the trail.</summary>
    public sealed record CachedCase(SharedCase Check, int Calls, int FromGateway, int FromCache, int DecisionEntries, int CachedEntries)
    {
        public static CachedCase Of(JsonElement element)
        {
            var expect = element.GetProperty("expect");
            var trail = expect.GetProperty("trail");
            return new(SharedCase.Of(element), element.GetProperty("calls").GetInt32(), expect.GetProperty("fromGateway").GetInt32(), expect.GetProperty("fromCache").GetInt32(), trail.GetProperty("decisionEntries").GetInt32(), trail.GetProperty("cachedEntries").GetInt32());
        }
    }

    /// <summary>A check against a gateway that never answers, under a failure mode and ThrowOnDenied setting.</summary>
    public sealed record TimeoutCase(SharedCase Check, string FailureMode, bool ThrowOnDenied, double TimeoutSeconds, bool Runs, bool Throws, string AuditedDecision)
    {
        public static TimeoutCase Of(JsonElement element)
        {
            var expect = element.GetProperty("expect");
            return new(
                SharedCase.Of(element),
                element.GetProperty("failureMode").GetString()!,
                element.GetProperty("throwOnDenied").GetBoolean(),
                element.GetProperty("timeoutSeconds").GetDouble(),
                expect.GetProperty("runs").GetBoolean(),
                expect.GetProperty("throws").GetBoolean(),
                expect.GetProperty("auditedDecision").GetString()!);
        }
    }

    /// <summary>A check with nothing at the gateway's addresses (<c>closed-port</c> or <c>unresolvable</c>), under a failure mode and ThrowOnDenied setting.</summary>
    public sealed record UnreachableCase(SharedCase Check, string Address, string FailureMode, bool ThrowOnDenied, double TimeoutSeconds, bool Runs, bool Throws, int AuditEvents)
    {
        public static UnreachableCase Of(JsonElement element)
        {
            var expect = element.GetProperty("expect");
            return new(
                SharedCase.Of(element),
                element.GetProperty("address").GetString()!,
                element.GetProperty("failureMode").GetString()!,
                element.GetProperty("throwOnDenied").GetBoolean(),
                element.GetProperty("timeoutSeconds").GetDouble(),
                expect.GetProperty("runs").GetBoolean(),
                expect.GetProperty("throws").GetBoolean(),
                expect.GetProperty("auditEvents").GetInt32());
        }
    }

    public sealed record Agent(string Name, string TrustTier, string[] Tags);

    public sealed record SharedCase(string Name, string Agent, string Plugin, string Function, Dictionary<string, object?> Args, Dictionary<string, object?> Context, string ExpectDecision, string ExpectPolicy)
    {
        public static SharedCase Of(JsonElement element) => new(
            element.GetProperty("name").GetString()!,
            element.GetProperty("agent").GetString()!,
            element.GetProperty("plugin").GetString()!,
            element.GetProperty("function").GetString()!,
            ValuesOf(element.GetProperty("args")),
            ValuesOf(element.GetProperty("context")),
            element.GetProperty("expect").TryGetProperty("decision", out var decision) ? decision.GetString()! : "",
            element.GetProperty("expect").TryGetProperty("policy", out var policy) ? policy.GetString()! : "");

        /// <summary>The JSON values as a caller would pass them (JsonElement is taken as it is).</summary>
        private static Dictionary<string, object?> ValuesOf(JsonElement element) =>
            element.EnumerateObject().ToDictionary(property => property.Name, property => (object?)property.Value.Clone());
    }
}
