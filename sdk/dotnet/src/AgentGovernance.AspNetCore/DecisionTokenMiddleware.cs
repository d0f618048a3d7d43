using System.Buffers;
using System.Text.Json;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;

namespace AgentGovernance.AspNetCore;

/// <summary>
/// Lets a request through only with a valid <c>X-Service-Decision-Token</c> for exactly its
/// method, target (as received: <see cref="IHttpRequestFeature.RawTarget"/>) and body, and puts
/// what the token proves in the request's features (<c>context.GetVerifiedDecision()</c>).
/// Refusals are 401 <c>{"error": "decision_token_invalid", "problem", "message"}</c>; a body over
/// <see cref="DecisionTokenVerifierOptions.MaxBodyBytes"/> is 413. The body is read whole (to check
/// its hash) and left for the rest of the pipeline to read again.
/// </summary>
public sealed class DecisionTokenMiddleware
{
    /// <summary>The header the gateway forwards the token in.</summary>
    public const string HeaderName = "X-Service-Decision-Token";

    private readonly RequestDelegate next;
    private readonly DecisionTokenVerifier verifier;
    private readonly long maxBodyBytes;

    /// <summary>Creates the middleware (<c>app.UseDecisionTokens()</c>).</summary>
    public DecisionTokenMiddleware(RequestDelegate next, DecisionTokenVerifier verifier, DecisionTokenVerifierOptions options)
    {
        ArgumentNullException.ThrowIfNull(next);
        ArgumentNullException.ThrowIfNull(verifier);
        ArgumentNullException.ThrowIfNull(options);
        this.next = next;
        this.verifier = verifier;
        maxBodyBytes = options.MaxBodyBytes;
    }

    /// <summary>Verifies, then hands the request on; refuses it otherwise.</summary>
    public async Task InvokeAsync(HttpContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var request = context.Request;
        var body = await BodyOfAsync(request, context.RequestAborted).ConfigureAwait(false);
        if (body is null)
        {
            await RefuseAsync(context, StatusCodes.Status413PayloadTooLarge, DecisionTokenProblem.Malformed, $"Body larger than {maxBodyBytes} bytes").ConfigureAwait(false);
            return;
        }
        var target = context.Features.Get<IHttpRequestFeature>()?.RawTarget is { Length: > 0 } raw ? raw : $"{request.PathBase}{request.Path}{request.QueryString}";
        VerifiedDecision decision;
        try
        {
            decision = await verifier.VerifyAsync(request.Headers[HeaderName].FirstOrDefault(), request.Method, target, body, context.RequestAborted).ConfigureAwait(false);
        }
        catch (DecisionTokenException refused)
        {
            await RefuseAsync(context, StatusCodes.Status401Unauthorized, refused.Problem, refused.Message).ConfigureAwait(false);
            return;
        }
        context.Features.Set(decision);
        await next(context).ConfigureAwait(false);
    }

    /// <summary>The body's bytes, rewound for the next reader; null past the bound.</summary>
    private async Task<byte[]?> BodyOfAsync(HttpRequest request, CancellationToken cancellationToken)
    {
        if (request.ContentLength > maxBodyBytes) return null;
        request.EnableBuffering();
        var buffer = new ArrayBufferWriter<byte>();
        while (true)
        {
            var read = await request.Body.ReadAsync(buffer.GetMemory(16 * 1024), cancellationToken).ConfigureAwait(false);
            if (read == 0) break;
            buffer.Advance(read);
            if (buffer.WrittenCount > maxBodyBytes) return null;
        }
        request.Body.Position = 0;
        return buffer.WrittenSpan.ToArray();
    }

    private static async Task RefuseAsync(HttpContext context, int status, DecisionTokenProblem problem, string message)
    {
        context.Response.StatusCode = status;
        context.Response.ContentType = "application/json";
        await JsonSerializer.SerializeAsync(context.Response.Body, new Refusal("decision_token_invalid", DecisionTokenException.NameOf(problem), message), RefusalJson.Default.Refusal, context.RequestAborted).ConfigureAwait(false);
    }
}

internal sealed record Refusal(string error, string problem, string message);

[System.Text.Json.Serialization.JsonSerializable(typeof(Refusal))]
internal sealed partial class RefusalJson : System.Text.Json.Serialization.JsonSerializerContext;
