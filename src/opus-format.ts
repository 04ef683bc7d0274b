// The audio formats an Opus stream may have here, written once: the configuration schema, the request
// and category schemas, the decoder and the upstream protocol all check against these lists. It imports
// nothing, so configuration can use it without depending on the voice code.

/** The sample rates libopus decodes at, in Hz. */
export const OPUS_SAMPLE_RATES = [8000, 12000, 16000, 24000, 48000] as const;
export type OpusSampleRate = (typeof OPUS_SAMPLE_RATES)[number];

/** Mono or stereo: the channel counts the decoder is built for. */
export const OPUS_CHANNEL_COUNTS = [1, 2] as const;

export function isOpusSampleRate(rate: unknown): rate is OpusSampleRate {
  return typeof rate === 'number' && (OPUS_SAMPLE_RATES as readonly number[]).includes(rate);
}
