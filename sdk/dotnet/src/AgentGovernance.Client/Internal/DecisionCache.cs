namespace AgentGovernance.Internal;

/// <summary>
/// Decisions the gateway marked cacheable, keyed by the policy version they were made on and
/// the hash of the question. <see cref="KnownVersion"/> is the newest version seen (from answers
/// and Subscribe events): a decision made on an older one is never kept, and a change event
/// drops every entry decided before it. While the Subscribe stream is down the cache is not
/// live: nothing is answered from it or kept in it, since a change would go unseen.
/// </summary>
internal sealed class DecisionCache
{
    private readonly object sync = new();
    private readonly int maxEntries;
    private readonly Dictionary<string, LinkedListNode<Entry>> entries = new(StringComparer.Ordinal);
    private readonly LinkedList<Entry> recency = new();
    private long knownVersion;
    private bool live;

    public DecisionCache(int maxEntries)
    {
        this.maxEntries = maxEntries;
    }

    /// <summary>The newest policy version seen.</summary>
    public long KnownVersion
    {
        get
        {
            lock (sync) return knownVersion;
        }
    }

    /// <summary>How many decisions it holds.</summary>
    public int Count
    {
        get
        {
            lock (sync) return entries.Count;
        }
    }

    /// <summary>The fresh decision for <paramref name="hash"/> on the newest version, when the cache is live.</summary>
    public bool TryGet(string hash, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out PolicyDecision? decision)
    {
        lock (sync)
        {
            decision = null;
            if (!live || !entries.TryGetValue(hash, out var node)) return false;
            var entry = node.Value;
            if (entry.Decision.PolicyVersion != knownVersion || Environment.TickCount64 >= entry.ExpiresAt)
            {
                Remove(node);
                return false;
            }
            recency.Remove(node);
            recency.AddFirst(node);
            decision = entry.Decision;
            return true;
        }
    }

    /// <summary>Keeps <paramref name="decision"/> if it is cacheable and made on the newest version seen.</summary>
    public void Put(string hash, PolicyDecision decision)
    {
        lock (sync)
        {
            if (decision.PolicyVersion > knownVersion)
            {
                Clear();
                knownVersion = decision.PolicyVersion;
            }
            if (!live || !decision.Cacheable || decision.CacheTtl <= TimeSpan.Zero || decision.PolicyVersion < knownVersion || maxEntries == 0) return;
            if (entries.TryGetValue(hash, out var old)) Remove(old);
            var node = recency.AddFirst(new Entry(hash, decision with { Source = DecisionSource.Cache }, Environment.TickCount64 + (long)decision.CacheTtl.TotalMilliseconds));
            entries[hash] = node;
            while (entries.Count > maxEntries) Remove(recency.Last!);
        }
    }

    /// <summary>
    /// A change event: every entry decided before it is stale. An answer's version already
    /// includes every change up to it, so a replayed older event ends nothing.
    /// </summary>
    public void Changed(long policyVersion)
    {
        lock (sync)
        {
            knownVersion = Math.Max(knownVersion, policyVersion);
            foreach (var node in entries.Values.Where(node => node.Value.Decision.PolicyVersion < policyVersion).ToList()) Remove(node);
        }
    }

    /// <summary>Forgets every entry and the versions seen: the gateway's versions went backwards (its database restored from a backup).</summary>
    public void Restart()
    {
        lock (sync)
        {
            Clear();
            knownVersion = 0;
        }
    }

    /// <summary>Whether the Subscribe stream is open; when it closes the cache empties.</summary>
    public void SetLive(bool isLive)
    {
        lock (sync)
        {
            live = isLive;
            if (!isLive) Clear();
        }
    }

    private void Remove(LinkedListNode<Entry> node)
    {
        recency.Remove(node);
        entries.Remove(node.Value.Hash);
    }

    private void Clear()
    {
        entries.Clear();
        recency.Clear();
    }

    private sealed record Entry(string Hash, PolicyDecision Decision, long ExpiresAt);
}
