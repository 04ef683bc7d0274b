// One second of real speech for `voice-hub simulate`: 50 Opus packets, 20 ms each, 16 kHz mono (24 kbit/s),
// packets 25..74 of test/fixtures/speech-16k-mono.packets.json (made by scripts/make-opus-fixture.sh from
// espeak-ng + opusenc). Embedded because the bundle cannot read test files and has no Opus encoder
// (`@evan/opus` is a devDependency); the simulator loops them.
export const SIM_PACKET_SAMPLE_RATE = 16000;
export const SIM_PACKET_CHANNELS = 1;
export const SIM_PACKET_MS = 20;

const PACKETS_BASE64: readonly string[] = [
  'aDBjwR1NFDEfY1rXV6jj/9GCPFVO1KyKUUQu6Qa00g1pgv9C/0M=', 'aAsEH26qr1mIwOsZXkR2pfGDjrHICPvpBrTSDWmC/0L/ew==',
  'aAfQpMUpFyzJz3CI903qH2riQAL73K0z8ykGtNINaYL/Qv9P', 'aAfQpMUl0ck8i0OLtwoOZz46R+no/E14l9NYCQa00g1pgv9C/2o=',
  'aAfQpMVTBEsL7YZtxhkv+t4mPGaWjf6BU98gHIJ8g1pvHL3jl74=', 'aAfQpMVUCGP0Bm6hGVW6mHtYWsgU8QUKHhiwTJ961INabxy945eS',
  'aAfBorEfyIL9MLj6n9Oty8KH7s62UDbS2d0ZEvZEHIJ8g1pvHL3jl60=', 'aAfQpMUnROQDAGtvFOiDgpJvbQIA5AKG0vzWaxQpBrTSDWmC/0L/QQ==',
  'aAfVGXoU/YICQDGbyAuYo5ZodZINGbkbZsLMnIJ8g1pvHL3jl5U=', 'aAfJecjJV8D+yCs6JUDO547JBrTSDWmC/0L/cA==',
  'aAfJecjJV8D+yCs6JUDO546pBrTSDWmC/0L/SA==', 'aAfJecjJV8D+yCs7mAjO546pBrTSDWmC/0L/aA==',
  'aAfJecjJV8D+yCs7mAjO546JBrTSDWmC/0L/SA==', 'aAfJecjJV8D+yCs9CtDO546pBrTSDWmC/0L/YA==',
  'aAfJecjJV8D+yCs9CtDO546pBrTSDWmC/0L/QA==', 'aAfJecjJV8D+yCs+fZjO546JBrTSDWmC/0L/YA==',
  'aAfJecjJV8D+yCs/8GDO546pBrTSDWmC/0L/eA==', 'aAfJecjJV8D+yCs/8GDO546JBrTSDWmC/0L/WA==',
  'aAfJecjJV8D+yCtBYyjO546JBrTSDWmC/0L/eA==', 'aIACipE4gKD51qniMf7ycSvbIaIB+2aNk7WVnJzVmj+EbgYchV/LtxCsApuBqT+asl8=',
  'aIRpxMIIoYYV26qxKdBKDnhvK2nxOc91yJwwfvFy+x9yi/s7EvYU18GgkNPY5Gb3CjTNsoeQQMjoGvTg8vKz', 'aIRDHLI2TShjJnYzJ61u7lz7ghHD+bdD9iYyvMWytqK8ubu1bXAnFGu/q/eeSYyaxgWzz8bnSBd6vRM2Dg==',
  'aKwyA8TbP49bgNtU/DvKypWB4iniUoBu++ULDvwUWdMEWBUlp4ZLY9Np9LTFIcUMf61cljV7LeJod1w1FYyXQGvMbQzuy1/Kbg/2R0Vgn5HIRX2pn1fj0TtDbEFj', 'aKWMZHv1AkDkwJdh2baNlcE5sbHHbpyKNuLQN1gz6tJdYcLJ+dTthi9+BtZaE3NaU/+xlEPpcQ9H7GyPpAdqObyGnLKRtea4Dp8hE/RbItU=',
  'aLBFvd7Nza+H+9UcB1EVYMKba53Lsej5DM/o0/xbegAwbmeTFuRGaN+F9IkZ1kRh4ozqiRlipoBFt4Mdb6jn35GoF5kqoIJOod5sSwUL', 'aLOR7fnplRw9+yld5F//beMLdXQN1p0cEDtLCNJnt+59xcXmeQmOB3nFZO/wpwPJAxRZvJLSaycCNkMPenvXzkUcXJ3HH8KOoLkXGSZyGAB/Ng==',
  'aK5eMFoEnu2Pg32bB1fXikPmhbFrrjeSqF1nqLemLvNtkOx8gY9SbryFutO5Eylly7ka2U/pVNiHitbfxrU6+aCbAA==', 'aKzQgZFg9i6A95yYDncEpXZN1ykpb9aSVPy3Z20dvX/YzXrEmh2hJu4/djTbBZdgFjlEOUcJEGRWLfJpmPU9YmR8CgN6',
  'aKrxImOIKliylxPUfjzZRNlhTYy4SfkKTZ5fMuQzrv7h7jNC9AgXSjsI/519ZxmvbnYjQqvPD9Qya/HShFYgFC+QzKWRJj4JMQ==', 'aKhnGwAGym2o74Ck1zJe8eVPZf7VAh7S8hWmHxEr1+YYNu3xkMKfgiwOQ3wiRd3VAP1x7coslGTMD4UL/OrbSnq09G709Q==',
  'aIOa+VEB6nn+axQAKK67PN67AhL9U+4how6f3y/TXlhIpBHnalmtCX2oqj29fDwbO5nLyf7k3oS1GMfGJFEedvvIW+0R', 'aJQTIRuSmy967bsK9zTE+tNQjH/Uv+xZRE1aYTbZKYvJV5XYweqaiDcGDv7Op2stxec02cpgRr2q',
  'aJQRZgFRY61EGNJJ9Aj2iTQuZ0DEXrNwlLFT/XKg8waPVjAukWjYya+uR+52PRViZ/pfjE6cnMge/w==', 'aJOio4g+uEbjAI+U7u+76QsulL5wqC/TTktERmeyAoWe7p7qmPkDCVQ+PhPZZTI21T6Kkic=',
  'aIRf8iypt97xs29vyBkYiuaOVcMM1lNxxMIM3jt/Pu40eG2ksAfF5FsjwJBMOfM2d64kS7u547fZicSM', 'aDvREHmsLBDMV3mN9V87js6HxxnjLz9iAQrilbkeHCk8GFJ4Jj+mP4A=',
  'eCOzAdXoX1Hg4CDwOuvXMUxniv/k4CRqSXZjiQFDFxMd+/Im5FTcijQ=', 'eL2Am0XuBHhDvS6FbrKoRzDKIJmPPh5oDSzGqc8tm2BPTMD1VX7PfyMaRNkTD8Exa0dgBwavh4ptRU/Mi55ioqJqqRrZ',
  'eJPLQ3a3o2kOlKH8P4s6tktqf7+0K8Hdh/VjXx6EsPavTrRLI43dfwe0rgHn9M+B4e1e71hpuoeY/qYr6bDxthBt', 'eITvIz1ByBBeEonfTZI62us2v1je9SvH2/juOFzNkFcu1Uq3+504N5Y8n+Bk7eTcqJSs51NjvEY+jEMhq3CkgIDi2Smg3Fg=',
  'eLGOlzSpe5/WbbOCUd9wuUD1IA22V1dbJOvPOCkojWfRofRECetm7jWK/UhNyqpuBbKLyE6rtZOmA9AvabKvKVyY4NsDcBDusQ==', 'eLO9Dp7QfdfaxqRjuuG9V6mwdIiMKdsgWTywwQPpziuWHeP9MLANNkPM17/QkTCBdMtHFkaUhEPK5uLfj0xG/wyYIsC9fQU3VieO',
  'eLHHY9wRMVWg686yRgkxZXaMk+kH5XrN05FhRVn9ECN5fMe5rgfGbhw6CHa8Orz2ogKSr27FAYo=', 'eLAQQ+W4aVw2Td7Nz17+fh4LIjLwWL66ljIfH8fxgKIOV8ePJo0P2oRGBQ0v4iwowfsl1WpTlQEe5FM=',
  'eK4Z1fPDsmUQ4I3lndl2GC063ef4BMxOeoWBU9vJVtQafVBsYT4DxdzTgw8oyvoDSB/ZC+fxOlSzoN/I', 'eKlFXxXmTfdXSlayoupQG83cAlx4SGHwkqTh1/X2Y2ZtTt5GIE2ncAurfx5zQckCY45QTd9xe5wTQ8RpxVXky6+GTocs9o9MCgn7',
  'eKk9Fc/a79aeOTAxvnvCcqGUx3r0yDB0IaD5043Owv0HX9Hl+5LFubZU0Av0n0behfS+TbMhi33GDYMo6XLeHW0=', 'eKcjR4RCEnHZY8UXyOxNOnkmmtGIoqbuDwMRvvK3XSoXe5VsStiDCC6Th8c5WYyBBJKEP4Q58U8BZGnF2LCwZh6Ufb3rrBSuMBg5fY3owQ==',
  'eJ7oZQTHLKn8e83X6lJPy4unOzZWHdDzeSeoy+oMafP2j6m0BaZbTgqfCOOSfnwKhazkcGwN2e6v+ndT0thpAUQUhzJ2sJ8k', 'eKvnBM4tx2pHwMbXZtqrzDn+yjyIvrhd3l4aHgF6lDdlR4x7WzHBr0uJhinGkZcvoKrNZWespAkHbgv1oAsP8DqPYFwNlaFDZ0M3qYw+82/dkbY=',
];

/** Fresh copies of the 50 packets, in order. */
export function simPackets(): Uint8Array[] {
  return PACKETS_BASE64.map((b64) => Uint8Array.from(Buffer.from(b64, 'base64')));
}
