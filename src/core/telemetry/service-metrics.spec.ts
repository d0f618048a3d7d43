import { BucketHistogram } from './bucket-histogram';
import { ServiceMetrics } from './service-metrics';

describe('ServiceMetrics', () => {
  it('writes counters, gauges and bucket histograms in the Prometheus text format, read at each scrape', async () => {
    const metrics = new ServiceMetrics(true);
    let requests = 0;
    const latency = new BucketHistogram([0.1, 1]);
    metrics.counter('test_requests_total', 'Requests', () => [[{ route: '/a' }, requests]]);
    metrics.gauge('test_queue', 'Queue', () => 7);
    metrics.gauge('test_absent', 'Nothing to measure', () => null);
    metrics.histogram('test_seconds', 'Latency', () => [[{ source: 'proxy' }, latency]]);

    requests = 3;
    latency.observe(0.05);
    latency.observe(0.5);
    latency.observe(5);
    const text = await metrics.exposition();

    expect(text).toContain('# TYPE test_requests_total counter\ntest_requests_total{route="/a"} 3');
    expect(text).toContain('test_queue 7');
    expect(text).toContain('# TYPE test_absent gauge');
    expect(text).not.toMatch(/^test_absent /m);
    expect(text).toContain(
      [
        '# TYPE test_seconds histogram',
        'test_seconds_bucket{source="proxy",le="0.1"} 1',
        'test_seconds_bucket{source="proxy",le="1"} 2',
        'test_seconds_bucket{source="proxy",le="+Inf"} 3',
        'test_seconds_sum{source="proxy"} 5.55',
        'test_seconds_count{source="proxy"} 3',
      ].join('\n'),
    );
    // The process metrics of prom-client come along.
    expect(text).toContain('process_cpu_seconds_total');

    requests = 5;
    expect(await metrics.exposition()).toContain('test_requests_total{route="/a"} 5');
  });

  it('registers nothing and reads nothing when /metrics is served nowhere', async () => {
    const metrics = new ServiceMetrics(false);
    const read = jest.fn(() => 1);
    metrics.counter('test_total', 'Nothing', read);
    expect(await metrics.exposition()).toBe('');
    expect(read).not.toHaveBeenCalled();
  });
});
