using System.Globalization;
using System.Net;
using System.Net.Http.Headers;
using System.Text.Json;

namespace AgentGovernance.Internal;

/// <summary>The adapter endpoints over HTTP (docs/pdp.md "Check, act, report"): <c>POST /v1/check</c>, the fallback when gRPC cannot connect, <c>POST /v1/audit</c>, and <c>GET /v1/approvals/:id</c> (docs/approvals.md).</summary>
internal sealed class HttpPdpTransport : IDisposable
{
    private readonly HttpClient http;
    private readonly Uri checkUrl;
    private readonly Uri auditUrl;
    private readonly Uri approvalsUrl;
    private readonly string apiKey;

    public HttpPdpTransport(Uri gatewayUrl, string apiKey, HttpMessageHandler? handler)
    {
        var baseUrl = gatewayUrl.AbsoluteUri.EndsWith('/') ? gatewayUrl : new Uri(gatewayUrl.AbsoluteUri + "/");
        checkUrl = new Uri(baseUrl, "v1/check");
        auditUrl = new Uri(baseUrl, "v1/audit");
        approvalsUrl = new Uri(baseUrl, "v1/approvals/");
        this.apiKey = apiKey;
        // A handler of the application's own is the application's to dispose.
        http = handler is null
            ? new HttpClient(new SocketsHttpHandler { PooledConnectionLifetime = TimeSpan.FromMinutes(5) }) { Timeout = Timeout.InfiniteTimeSpan }
            : new HttpClient(handler, disposeHandler: false) { Timeout = Timeout.InfiniteTimeSpan };
    }

    /// <summary>One <c>POST /v1/check</c>, given up after <paramref name="timeout"/>.</summary>
    public async Task<PolicyDecision> EvaluateAsync(CheckRequest request, TimeSpan timeout, CancellationToken cancellationToken)
    {
        using var body = new MemoryStream();
        using (var writer = new Utf8JsonWriter(body))
        {
            writer.WriteStartObject();
            writer.WriteString("agentId", request.AgentId);
            writer.WriteString("plugin", request.Plugin);
            writer.WriteString("function", request.Function);
            writer.WritePropertyName("arguments");
            JsonArguments.WriteObject(writer, request.Arguments);
            writer.WritePropertyName("context");
            JsonArguments.WriteObject(writer, request.Context);
            writer.WriteString("trustTier", request.TrustTier);
            if (!string.IsNullOrEmpty(request.ApprovalId)) writer.WriteString("approvalId", request.ApprovalId);
            if (!string.IsNullOrEmpty(request.SessionId)) writer.WriteString("sessionId", request.SessionId);
            writer.WriteEndObject();
        }
        using var answer = await SendAsync(HttpMethod.Post, checkUrl, body.ToArray(), timeout, cancellationToken).ConfigureAwait(false);
        var root = answer.RootElement;
        var pending = Text(root, "decision") == "pending";
        return new PolicyDecision
        {
            IsPending = pending,
            ApprovalId = pending ? Text(root, "approvalId") : "",
            ApprovalExpiresAt = pending ? InstantOf(Text(root, "expiresAt")) : null,
            IsAllowed = Text(root, "decision") == "allow",
            Reason = Text(root, "reason"),
            Policy = Text(root, "policy"),
            Rule = Text(root, "rule"),
            PolicyVersion = Number(root, "policyVersion"),
            TraceId = Text(root, "traceId"),
            DecisionId = Text(root, "decisionId"),
            Cacheable = root.TryGetProperty("cacheable", out var cacheable) && cacheable.ValueKind == JsonValueKind.True,
            CacheTtl = TimeSpan.FromMilliseconds(Number(root, "cacheTtlMs")),
            Enforced = !(root.TryGetProperty("enforced", out var enforced) && enforced.ValueKind == JsonValueKind.False),
            Source = DecisionSource.Http,
        };
    }

    /// <summary>
    /// One <c>POST /v1/audit</c> of a batch <c>{"events": [...]}</c> (docs/pdp.md "Batches"), the
    /// events' bodies byte for byte as written ahead; the gateway records an eventId once, however
    /// often it is sent. A batch it refuses names the events at fault by index.
    /// </summary>
    public async Task SendAuditAsync(IReadOnlyList<AuditEvent> batch, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var length = 12 + batch.Sum(auditEvent => auditEvent.Json.Length + 1);
        var body = new byte[length];
        var at = 0;
        void Put(ReadOnlySpan<byte> bytes)
        {
            bytes.CopyTo(body.AsSpan(at));
            at += bytes.Length;
        }
        Put("{\"events\":["u8);
        for (var index = 0; index < batch.Count; index++)
        {
            if (index > 0) Put(","u8);
            Put(batch[index].Json);
        }
        Put("]}"u8);
        using var answer = await SendAsync(HttpMethod.Post, auditUrl, body.AsSpan(0, at).ToArray(), timeout, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>One <c>GET /v1/approvals/:id</c>: where the approval a pending answer opened stands.</summary>
    public async Task<ApprovalStatus> ApprovalStatusAsync(string approvalId, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var url = new Uri(approvalsUrl, Uri.EscapeDataString(approvalId));
        using var answer = await SendAsync(HttpMethod.Get, url, null, timeout, cancellationToken).ConfigureAwait(false);
        return Text(answer.RootElement, "status") switch
        {
            "pending" => ApprovalStatus.Pending,
            "approved" => ApprovalStatus.Approved,
            "rejected" => ApprovalStatus.Rejected,
            "expired" => ApprovalStatus.Expired,
            "used" => ApprovalStatus.Used,
            var other => throw new GatewayUnavailableException($"HTTP {url.AbsolutePath}: unknown status {other[..Math.Min(other.Length, 40)]}"),
        };
    }

    /// <summary>An ISO 8601 instant of the gateway's, or null when there is none.</summary>
    public static DateTimeOffset? InstantOf(string text) =>
        DateTimeOffset.TryParse(text, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out var instant) ? instant : null;

    public void Dispose() => http.Dispose();

    private async Task<JsonDocument> SendAsync(HttpMethod method, Uri url, byte[]? body, TimeSpan timeout, CancellationToken cancellationToken)
    {
        using var deadline = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        deadline.CancelAfter(timeout);
        using var request = new HttpRequestMessage(method, url);
        if (body is not null)
        {
            request.Content = new ByteArrayContent(body);
            request.Content.Headers.ContentType = new MediaTypeHeaderValue("application/json");
        }
        request.Headers.Add("x-api-key", apiKey);
        try
        {
            using var response = await http.SendAsync(request, deadline.Token).ConfigureAwait(false);
            var payload = await response.Content.ReadAsByteArrayAsync(deadline.Token).ConfigureAwait(false);
            var document = Parse(payload);
            if (response.IsSuccessStatusCode) return document;
            using (document)
            {
                throw ErrorOf(url, response.StatusCode, document.RootElement);
            }
        }
        catch (OperationCanceledException error) when (!cancellationToken.IsCancellationRequested)
        {
            throw new GatewayTimeoutException(string.Create(CultureInfo.InvariantCulture, $"HTTP {method} {url.AbsoluteUri}: no answer within {timeout.TotalSeconds:0.###} s"), error);
        }
        catch (HttpRequestException error)
        {
            throw new GatewayUnavailableException($"HTTP {url.AbsolutePath}: {error.Message}", cannotConnect: true, error);
        }
    }

    /// <summary>As the other SDKs map them: a body too large (413) or not JSON (415) is the request's fault, not an outage.</summary>
    private static AgentGovernanceException ErrorOf(Uri url, HttpStatusCode status, JsonElement body)
    {
        var message = Text(body, "message") is { Length: > 0 } text ? text : status.ToString();
        GatewayRejection? rejection = (int)status switch
        {
            400 or 413 or 415 => GatewayRejection.InvalidArgument,
            401 => GatewayRejection.Unauthenticated,
            403 => GatewayRejection.PermissionDenied,
            404 => GatewayRejection.NotFound,
            429 => GatewayRejection.ResourceExhausted,
            _ => null,
        };
        if (rejection is { } code) return new GatewayRejectedException(code, message, RetryAfterOf(body));
        return new GatewayUnavailableException(string.Create(CultureInfo.InvariantCulture, $"HTTP {url.AbsolutePath}: {(int)status} {message}"));
    }

    private static TimeSpan? RetryAfterOf(JsonElement body) =>
        body.ValueKind == JsonValueKind.Object && body.TryGetProperty("retry_after", out var value) && value.TryGetInt64(out var seconds) && seconds >= 0 ? TimeSpan.FromSeconds(seconds) : null;

    private static JsonDocument Parse(byte[] payload)
    {
        try
        {
            return JsonDocument.Parse(payload.Length == 0 ? "{}"u8.ToArray() : payload);
        }
        catch (JsonException)
        {
            return JsonDocument.Parse("{}");
        }
    }

    private static string Text(JsonElement body, string name) =>
        body.ValueKind == JsonValueKind.Object && body.TryGetProperty(name, out var value) && value.ValueKind == JsonValueKind.String ? value.GetString()! : "";

    private static long Number(JsonElement body, string name)
    {
        if (body.ValueKind != JsonValueKind.Object || !body.TryGetProperty(name, out var value)) return 0;
        if (value.ValueKind == JsonValueKind.Number && value.TryGetInt64(out var number)) return number;
        return value.ValueKind == JsonValueKind.String && long.TryParse(value.GetString(), NumberStyles.Integer, CultureInfo.InvariantCulture, out number) ? number : 0;
    }
}
