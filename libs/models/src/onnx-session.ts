/**
 * ONNX Runtime session options of the in-process models (embeddings, the judge's cross-encoders), one place.
 *
 * `session.x64quantprecision = 1`: the committed and shared models are int8-quantized (`model_quantized.onnx`). On x86-64
 * CPUs without AVX-512 VNNI (AVX2 only: older Intel, AMD EPYC before Zen 4) ONNX Runtime's u8s8 GEMM kernels add int8
 * products pairwise into saturating int16 lanes (VPMADDUBSW), so the same model gives other scores than on a VNNI CPU:
 * measured here, the requirement-satisfaction model read "log users off after 15 minutes of inactivity" as meeting
 * "terminate a session after inactivity" at 78 % instead of 73 % and the judge said NOT_FOUND instead of COMPLIANT.
 * The option promotes the products to int16 before adding (exact, like VNNI), so verdicts and figures do not depend on
 * the CPU; it costs speed on AVX2 CPUs only. Source: onnxruntime PR #12088 (session config key
 * `kOrtSessionOptionsConfigX64QuantPrecision`), issues #6004 and #14642; Intel oneDNN, "Nuances of int8 computations".
 *
 * `session.intra_op.allow_spinning = 0`: after a forward pass, ONNX Runtime's intra-op threads otherwise spin-wait for the
 * next one (the default), holding cores the rest of the process needs at that moment. On 2 cores a hybrid search embeds
 * its query while LanceDB runs the BM25 search and then the dense one: with spinning, `npm run bench:query` at 1M chunks
 * (100 orgs) gave p50 / p95 67-77 / 97-103 ms, without it 36-38 / 53-60 ms; a query embedded alone takes ~1 ms longer
 * (thread wake-up: p50 3.4 → 4.4 ms) and bulk embedding is unchanged (docs/retrieval.md). Source: ONNX Runtime
 * "Thread management" (`session.intra_op.allow_spinning`, `onnxruntime_session_options_config_keys.h`).
 *
 * @param threads intra-op threads (≥ 1). @returns the `session_options` transformers.js hands to onnxruntime-node.
 */
export function onnxSessionOptions(threads: number): { intraOpNumThreads: number; interOpNumThreads: number; extra: Record<string, unknown> } {
  return { intraOpNumThreads: threads, interOpNumThreads: 1, extra: { session: { x64quantprecision: '1', intra_op: { allow_spinning: '0' } } } };
}
