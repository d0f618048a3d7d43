using System.Buffers.Text;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using NSec.Cryptography;

namespace AgentGovernance.AspNetCore;

/// <summary>
/// Verifies the gateway's decision tokens (<c>X-Service-Decision-Token</c>), offline, from its
/// JWKS (docs/security.md "Decision tokens" in the gateway's repository describes the format):
/// <c>&lt;JWS&gt;~&lt;claims&gt;~&lt;proof&gt;</c>, the JWS a JWT of a gateway key (or of a sidecar
/// key the gateway certified, its <c>sck</c> header) over the root of a Merkle tree, the claims
/// this decision's, the proof the path from their leaf to that root. Thread-safe; one per app.
/// </summary>
public sealed class DecisionTokenVerifier : IDisposable
{
    /// <summary>The key of an MCP tool call's <c>params._meta</c> that carries its decision token.</summary>
    public const string ToolCallMetaKey = "io.agentgov/decision-token";

    private const string ToolCallMethod = "TOOLS/CALL";
    private const string BatchType = "decision-batch+jwt";
    private const string SidecarKeyType = "sidecar-key+jwt";
    private const int StepBytes = 33;
    private const int MaxProofSteps = 16;
    private static readonly TimeSpan FetchTimeout = TimeSpan.FromSeconds(5);

    private readonly DecisionTokenVerifierOptions options;
    private readonly HttpClient? http;
    private readonly object sync = new();
    private Dictionary<string, VerificationKey> keys = new(StringComparer.Ordinal);
    private long fetchedAt = long.MinValue;
    private Task? fetching;

    /// <summary>A verifier with <paramref name="options"/>.</summary>
    /// <exception cref="ArgumentException">The options are not usable; the message names every problem.</exception>
    public DecisionTokenVerifier(DecisionTokenVerifierOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var problems = options.Validate();
        if (problems.Count > 0) throw new ArgumentException($"Invalid decision token options: {string.Join("; ", problems)}", nameof(options));
        this.options = options;
        if (options.Jwks is { } jwks) keys = KeysOf(jwks);
        else http = options.HttpHandler is { } handler ? new HttpClient(handler, disposeHandler: false) : new HttpClient();
    }

    /// <summary>
    /// The decision <paramref name="token"/> proves for the request <paramref name="method"/>
    /// <paramref name="target"/> (path and query as received, <c>/orders/42?full=1</c>) with
    /// <paramref name="body"/>; throws <see cref="DecisionTokenException"/> when it proves none.
    /// </summary>
    public async ValueTask<VerifiedDecision> VerifyAsync(string? token, string method, string target, ReadOnlyMemory<byte> body, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(method);
        ArgumentNullException.ThrowIfNull(target);
        if (string.IsNullOrEmpty(token)) throw new DecisionTokenException(DecisionTokenProblem.Missing, "No X-Service-Decision-Token: the call did not come through the gateway");
        return await VerifyTokenAsync(token, credentialParameter => RequestHash(method, target, body.Span, credentialParameter), cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// The decision an MCP <c>tools/call</c> request carries in its <c>params._meta</c>
    /// (<see cref="ToolCallMetaKey"/>), for exactly the tool <c>params.name</c> with the arguments
    /// <c>params.arguments</c>; <paramref name="parameters"/> is the request's <c>params</c> object
    /// as received. Throws <see cref="DecisionTokenException"/> when it proves none.
    /// </summary>
    public async ValueTask<VerifiedDecision> VerifyToolCallAsync(JsonElement parameters, CancellationToken cancellationToken = default)
    {
        if (parameters.ValueKind != JsonValueKind.Object) throw new DecisionTokenException(DecisionTokenProblem.Malformed, "Malformed tool call: params is not an object");
        string? token = null;
        if (parameters.TryGetProperty("_meta", out var meta) && meta.ValueKind == JsonValueKind.Object && meta.TryGetProperty(ToolCallMetaKey, out var carried) && carried.ValueKind == JsonValueKind.String)
        {
            token = carried.GetString();
        }
        if (string.IsNullOrEmpty(token)) throw MissingToolCallToken();
        if (!parameters.TryGetProperty("name", out var name) || name.ValueKind != JsonValueKind.String) throw new DecisionTokenException(DecisionTokenProblem.Malformed, "Malformed tool call: params.name is not a string");
        JsonElement? arguments = parameters.TryGetProperty("arguments", out var given) && given.ValueKind != JsonValueKind.Null ? given : null;
        if (arguments is { ValueKind: not JsonValueKind.Object }) throw new DecisionTokenException(DecisionTokenProblem.Malformed, "Malformed tool call: params.arguments is not an object");
        // Canonicalised before the token is checked: arguments no double can hold are refused as malformed.
        var expected = ToolCallHash(name.GetString()!, arguments is { } present ? CanonicalJson.Serialize(present) : "{}");
        return await VerifyTokenAsync(token, _ => expected, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// The decision <paramref name="token"/> (a tool call's <c>_meta</c> <see cref="ToolCallMetaKey"/>)
    /// proves for the tool <paramref name="toolName"/> called with <paramref name="arguments"/>
    /// (none: <c>{}</c>), as an MCP SDK hands them to a tool; throws <see cref="DecisionTokenException"/> when it proves none.
    /// </summary>
    public async ValueTask<VerifiedDecision> VerifyToolCallAsync(string? token, string toolName, IEnumerable<KeyValuePair<string, JsonElement>>? arguments, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(toolName);
        if (string.IsNullOrEmpty(token)) throw MissingToolCallToken();
        var expected = ToolCallHash(toolName, arguments is null ? "{}" : CanonicalJson.Serialize(arguments));
        return await VerifyTokenAsync(token, _ => expected, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// The hash a tool call's <c>req</c> claim must equal (the gateway's): <see cref="RequestHash"/>
    /// of the method <c>TOOLS/CALL</c>, the tool's name as the target and the UTF-8 bytes of
    /// <paramref name="canonicalArguments"/> (<see cref="CanonicalJson"/> of the arguments).
    /// </summary>
    public static string ToolCallHash(string toolName, string canonicalArguments)
    {
        ArgumentNullException.ThrowIfNull(toolName);
        ArgumentNullException.ThrowIfNull(canonicalArguments);
        return RequestHash(ToolCallMethod, toolName, Encoding.UTF8.GetBytes(canonicalArguments));
    }

    private static DecisionTokenException MissingToolCallToken() =>
        new(DecisionTokenProblem.Missing, $"No decision token in the tool call's _meta[\"{ToolCallMetaKey}\"]: the call did not come through the gateway");

    private async ValueTask<VerifiedDecision> VerifyTokenAsync(string token, Func<string?, string> expectedHash, CancellationToken cancellationToken)
    {
        var parts = token.Split('~');
        if (parts.Length != 3) throw Malformed("not <JWS>~<claims>~<proof>");
        var segments = parts[0].Split('.');
        if (segments.Length != 3) throw Malformed("the JWS is not compact");
        using var header = JsonPart(segments[0], "header");
        if (Text(header, "typ") != BatchType) throw Malformed($"typ is not {BatchType}");
        var now = options.TimeProvider.GetUtcNow().ToUnixTimeMilliseconds() / 1000.0;
        var tolerance = options.ClockTolerance.TotalSeconds;
        var certified = Text(header, "sck") is { } certificate ? await SidecarKeyAsync(certificate, now, cancellationToken).ConfigureAwait(false) : null;
        var key = certified?.Key ?? await KeyAsync(Text(header, "kid"), cancellationToken).ConfigureAwait(false);
        CheckSignature(segments, header, key);
        using var batch = JsonPart(segments[1], "payload");
        CheckIssuer(Text(batch, "iss"));
        if (Number(batch, "exp") is not { } batchExpiry || batchExpiry + tolerance < now) throw new DecisionTokenException(DecisionTokenProblem.Expired, "The decision token has expired");
        var claimsBytes = Decode(parts[1], "claims");
        var root = Text(batch, "dtr") is { } signedRoot ? Decode(signedRoot, "root") : null;
        if (root is null || !RootOf(claimsBytes, Decode(parts[2], "proof")).AsSpan().SequenceEqual(root)) throw new DecisionTokenException(DecisionTokenProblem.BadSignature, "The decision claims are not those the gateway signed");
        var claims = ClaimsOf(claimsBytes);
        if (claims.Expiry + tolerance < now) throw new DecisionTokenException(DecisionTokenProblem.Expired, "The decision token has expired");
        if (certified is not null && certified.Org != claims.Org) throw new DecisionTokenException(DecisionTokenProblem.BadSignature, "The sidecar is not of the decision's organization");
        if (expectedHash(claims.CredentialParameter) != claims.Request) throw new DecisionTokenException(DecisionTokenProblem.WrongRequest, $"The decision token is for another request (decision {claims.DecisionId})");
        return new VerifiedDecision
        {
            DecisionId = claims.DecisionId,
            AgentId = claims.Agent,
            OrgId = claims.Org,
            Action = claims.Action,
            ApprovalId = claims.ApprovalId,
            ExpiresAt = DateTimeOffset.FromUnixTimeMilliseconds((long)(claims.Expiry * 1000)),
            SidecarId = certified?.SidecarId,
        };
    }

    /// <summary>
    /// The hash a token's <c>req</c> claim must equal (the gateway's): base64url SHA-256 of the
    /// method, a line feed, the target, a line feed and the body, the query parameter
    /// <paramref name="credentialParameter"/> (an injected credential's) left out of the target.
    /// </summary>
    public static string RequestHash(string method, string target, ReadOnlySpan<byte> body, string? credentialParameter = null)
    {
        ArgumentNullException.ThrowIfNull(method);
        ArgumentNullException.ThrowIfNull(target);
        if (credentialParameter is not null)
        {
            var at = target.IndexOf('?', StringComparison.Ordinal);
            if (at != -1)
            {
                var query = string.Join('&', target[(at + 1)..].Split('&').Where(item => ParameterName(item) != credentialParameter));
                target = query.Length == 0 ? target[..at] : $"{target[..at]}?{query}";
            }
        }
        using var hash = System.Security.Cryptography.IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        hash.AppendData(Encoding.UTF8.GetBytes($"{method.ToUpperInvariant()}\n{target}\n"));
        hash.AppendData(body);
        return Base64Url.EncodeToString(hash.GetHashAndReset());
    }

    /// <inheritdoc />
    public void Dispose() => http?.Dispose();

    private static string ParameterName(string item)
    {
        var equals = item.IndexOf('=', StringComparison.Ordinal);
        var raw = (equals == -1 ? item : item[..equals]).Replace('+', ' ');
        return Uri.UnescapeDataString(raw);
    }

    private void CheckIssuer(string? issuer)
    {
        if (options.Issuer is not null && issuer != options.Issuer) throw new DecisionTokenException(DecisionTokenProblem.WrongIssuer, $"The decision token is of another issuer ({issuer})");
    }

    /// <summary>A sidecar's key, from the certificate the gateway gave it: a JWT of a gateway key.</summary>
    private async Task<CertifiedKey> SidecarKeyAsync(string certificate, double now, CancellationToken cancellationToken)
    {
        var segments = certificate.Split('.');
        if (segments.Length != 3) throw Malformed("the sidecar key certificate is not a compact JWS");
        using var header = JsonPart(segments[0], "certificate header");
        if (Text(header, "typ") != SidecarKeyType) throw Malformed($"the certificate's typ is not {SidecarKeyType}");
        CheckSignature(segments, header, await KeyAsync(Text(header, "kid"), cancellationToken).ConfigureAwait(false));
        using var payload = JsonPart(segments[1], "certificate");
        CheckIssuer(Text(payload, "iss"));
        if (Number(payload, "exp") is not { } expiry || expiry + options.ClockTolerance.TotalSeconds < now) throw new DecisionTokenException(DecisionTokenProblem.Expired, "The sidecar key certificate has expired");
        var root = payload.RootElement;
        if (Text(payload, "org") is not { } org || Text(payload, "sub") is not { } sidecar
            || !root.TryGetProperty("cnf", out var confirmation) || confirmation.ValueKind != JsonValueKind.Object
            || !confirmation.TryGetProperty("jwk", out var jwk) || jwk.ValueKind != JsonValueKind.Object)
        {
            throw Malformed("the certificate names no organization, sidecar or key");
        }
        return new CertifiedKey(VerificationKey.Of(jwk) ?? throw Malformed("a key is neither Ed25519 nor P-256"), org, sidecar);
    }

    private async Task<VerificationKey> KeyAsync(string? kid, CancellationToken cancellationToken)
    {
        if (kid is null) throw Malformed("no kid");
        if (!keys.TryGetValue(kid, out var key) && http is not null)
        {
            await RefreshAsync(cancellationToken).ConfigureAwait(false);
            keys.TryGetValue(kid, out key);
        }
        return key ?? throw new DecisionTokenException(DecisionTokenProblem.UnknownKey, $"No key {kid} in the gateway's JWKS");
    }

    /// <summary>One fetch at a time, at most every RefreshInterval: made-up kids cannot make it fetch more.</summary>
    private Task RefreshAsync(CancellationToken cancellationToken)
    {
        lock (sync)
        {
            if (fetching is not null) return fetching.WaitAsync(cancellationToken);
            if (fetchedAt != long.MinValue && options.TimeProvider.GetElapsedTime(fetchedAt) < options.RefreshInterval) return Task.CompletedTask;
            fetching = FetchAsync();
            return fetching.WaitAsync(cancellationToken);
        }
    }

    private async Task FetchAsync()
    {
        try
        {
            using var timeout = new CancellationTokenSource(FetchTimeout);
            var json = await http!.GetStringAsync(options.JwksUrl, timeout.Token).ConfigureAwait(false);
            keys = KeysOf(json);
        }
        catch (Exception error) when (error is HttpRequestException or OperationCanceledException or JsonException)
        {
            // Kept: the keys fetched before; an unknown kid is then refused.
        }
        finally
        {
            lock (sync)
            {
                fetchedAt = options.TimeProvider.GetTimestamp();
                fetching = null;
            }
        }
    }

    private static void CheckSignature(string[] segments, JsonDocument header, VerificationKey key)
    {
        var input = Encoding.ASCII.GetBytes($"{segments[0]}.{segments[1]}");
        var signature = Decode(segments[2], "signature");
        var algorithm = Text(header, "alg");
        if (!key.Fits(algorithm)) throw new DecisionTokenException(DecisionTokenProblem.BadSignature, $"Algorithm {algorithm} does not fit key {Text(header, "kid")}");
        if (!key.Verify(input, signature)) throw new DecisionTokenException(DecisionTokenProblem.BadSignature, "The decision token's signature is not valid");
    }

    /// <summary>The Merkle root: leaf SHA-256(0x00 ‖ claims), node SHA-256(0x01 ‖ left ‖ right); a step is its side (0: the sibling is on the left) and the sibling.</summary>
    private static byte[] RootOf(byte[] claims, byte[] proof)
    {
        if (proof.Length % StepBytes != 0 || proof.Length / StepBytes > MaxProofSteps) throw Malformed("the proof is not whole steps");
        var node = SHA256.HashData([0, .. claims]);
        var input = new byte[1 + 64];
        input[0] = 1;
        for (var at = 0; at < proof.Length; at += StepBytes)
        {
            var sibling = proof.AsSpan(at + 1, StepBytes - 1);
            if (proof[at] == 0)
            {
                sibling.CopyTo(input.AsSpan(1));
                node.CopyTo(input.AsSpan(33));
            }
            else
            {
                node.CopyTo(input.AsSpan(1));
                sibling.CopyTo(input.AsSpan(33));
            }
            node = SHA256.HashData(input);
        }
        return node;
    }

    private static Claims ClaimsOf(byte[] bytes)
    {
        JsonDocument document;
        try
        {
            document = JsonDocument.Parse(bytes);
        }
        catch (JsonException)
        {
            throw Malformed("the claims are not JSON");
        }
        using (document)
        {
            if (document.RootElement.ValueKind != JsonValueKind.Object) throw Malformed("the claims are not a JSON object");
            string Required(string name) => Text(document, name) ?? throw Malformed($"the claims have no {name}");
            var credential = document.RootElement.TryGetProperty("cq", out var cq) ? cq.ValueKind == JsonValueKind.String ? cq.GetString() : throw Malformed("cq is not a string") : null;
            return new Claims(Required("jti"), Required("sub"), Required("org"), Required("act"), Required("req"), Text(document, "apr"), credential, Number(document, "exp") ?? throw Malformed("the claims have no exp"));
        }
    }

    private static Dictionary<string, VerificationKey> KeysOf(string jwks)
    {
        var found = new Dictionary<string, VerificationKey>(StringComparer.Ordinal);
        using var document = JsonDocument.Parse(jwks);
        if (!document.RootElement.TryGetProperty("keys", out var list) || list.ValueKind != JsonValueKind.Array) return found;
        foreach (var jwk in list.EnumerateArray())
        {
            if (jwk.ValueKind != JsonValueKind.Object || !jwk.TryGetProperty("kid", out var kid) || kid.ValueKind != JsonValueKind.String) continue;
            // A key of a kind this verifier does not use is skipped.
            if (VerificationKey.Of(jwk) is { } key) found[kid.GetString()!] = key;
        }
        return found;
    }

    private static JsonDocument JsonPart(string part, string what)
    {
        try
        {
            var document = JsonDocument.Parse(Decode(part, what));
            if (document.RootElement.ValueKind == JsonValueKind.Object) return document;
            document.Dispose();
        }
        catch (JsonException)
        {
            // Reported below.
        }
        throw Malformed($"the {what} is not a JSON object");
    }

    private static string? Text(JsonDocument document, string name) =>
        document.RootElement.TryGetProperty(name, out var value) && value.ValueKind == JsonValueKind.String ? value.GetString() : null;

    private static double? Number(JsonDocument document, string name) =>
        document.RootElement.TryGetProperty(name, out var value) && value.ValueKind == JsonValueKind.Number ? value.GetDouble() : null;

    private static byte[] Decode(string part, string what)
    {
        foreach (var character in part)
        {
            if (!char.IsAsciiLetterOrDigit(character) && character is not ('-' or '_')) throw Malformed($"the {what} is not base64url");
        }
        try
        {
            return Base64Url.DecodeFromChars(part);
        }
        catch (FormatException)
        {
            throw Malformed($"the {what} is not base64url");
        }
    }

    private static DecisionTokenException Malformed(string detail) => new(DecisionTokenProblem.Malformed, $"Malformed decision token: {detail}");

    private sealed record Claims(string DecisionId, string Agent, string Org, string Action, string Request, string? ApprovalId, string? CredentialParameter, double Expiry);

    private sealed record CertifiedKey(VerificationKey Key, string Org, string SidecarId);

    /// <summary>A public key of the JWKS: Ed25519 (EdDSA) or P-256 (ES256).</summary>
    private sealed class VerificationKey
    {
        private readonly PublicKey? ed25519;
        private readonly ECParameters? p256;

        private VerificationKey(PublicKey? ed25519, ECParameters? p256)
        {
            this.ed25519 = ed25519;
            this.p256 = p256;
        }

        public static VerificationKey? Of(JsonElement jwk)
        {
            string? Field(string name) => jwk.TryGetProperty(name, out var value) && value.ValueKind == JsonValueKind.String ? value.GetString() : null;
            try
            {
                if (Field("kty") == "OKP" && Field("crv") == "Ed25519" && Field("x") is { } x)
                {
                    return new VerificationKey(PublicKey.Import(SignatureAlgorithm.Ed25519, Decode(x, "key"), KeyBlobFormat.RawPublicKey), null);
                }
                if (Field("kty") == "EC" && Field("crv") == "P-256" && Field("x") is { } ex && Field("y") is { } ey)
                {
                    var parameters = new ECParameters { Curve = ECCurve.NamedCurves.nistP256, Q = new ECPoint { X = Decode(ex, "key"), Y = Decode(ey, "key") } };
                    parameters.Validate();
                    return new VerificationKey(null, parameters);
                }
            }
            catch (Exception error) when (error is FormatException or DecisionTokenException or CryptographicException)
            {
                return null;
            }
            return null;
        }

        public bool Fits(string? algorithm) => (algorithm == "EdDSA" && ed25519 is not null) || (algorithm == "ES256" && p256 is not null);

        public bool Verify(byte[] input, byte[] signature)
        {
            if (ed25519 is not null) return SignatureAlgorithm.Ed25519.Verify(ed25519, input, signature);
            using var ecdsa = ECDsa.Create(p256!.Value);
            return ecdsa.VerifyData(input, signature, HashAlgorithmName.SHA256, DSASignatureFormat.IeeeP1363FixedFieldConcatenation);
        }
    }
}
