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
 * @param threads intra-op threads (≥ 1). @returns the `session_options` transformers.js hands to onnxruntime-node.
 */
export function onnxSessionOptions(threads: number): { intraOpNumThreads: number; interOpNumThreads: number; extra: Record<string, unknown> } {
  return { intraOpNumThreads: threads, interOpNumThreads: 1, extra: { session: { x64quantprecision: '1' } } };
}
