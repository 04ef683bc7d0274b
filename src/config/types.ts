// The effective configuration as the rest of the program sees it: merged, validated, frozen.
// Key names are those of the configuration schema (schema.ts); time spans are
// already converted to milliseconds.

export type LogLevelName = 'Trace' | 'Debug' | 'Information' | 'Warning' | 'Error' | 'Critical' | 'None';

export interface AppConfig {
  readonly Logging: { readonly LogLevel: Readonly<Record<string, LogLevelName>> & { readonly Default: LogLevelName } };
  readonly AllowedHosts: string;
  readonly VoiceService: {
    readonly ServerUrl: string;
    readonly ApiKey: string;
    readonly EnableVoice: boolean;
    readonly AudioSampleRate: number;
    readonly AudioChannels: number;
    /** ms */ readonly ConnectTimeout: number;
    /** ms */ readonly SessionIdleTimeout: number;
    readonly RequireDeviceToken: boolean;
    /** PEM file of extra trusted CAs for a `wss://` upstream; empty: system CAs only. */
    readonly CaFile: string;
    readonly DecodeQueuePackets: number;
    readonly DecodeQueueBytes: number;
    readonly DecoderRebuildsPerSecond: number;
    readonly ReconnectAttempts: number;
    /** ms */ readonly ReconnectWindow: number;
    /** ms */ readonly ReconnectDelay: number;
    /** ms */ readonly ReconnectMaxDelay: number;
    /** ms */ readonly ReconnectStableAfter: number;
  };
  readonly DeviceManagement: {
    readonly AllowDeviceRegistration: boolean;
    readonly MaxDevices: number;
    /** ms */ readonly TokenExpiration: number;
  };
  readonly Mqtt: {
    readonly BrokerAddress: string;
    readonly Port: number;
    readonly Username: string;
    readonly Password: string;
    readonly TopicPrefix: string;
    readonly HomeAssistantDiscovery: boolean;
    readonly DiscoveryPrefix: string;
  };
  readonly ApiKeys: readonly string[];
  readonly Server: {
    readonly Host: string;
    readonly Port: number;
    /** Used only when Certificate.Path is set. */
    readonly HttpsPort: number;
    /** PEM files; an empty Path means no HTTPS listener, an empty KeyPath that the key is in Path. */
    readonly Certificate: { readonly Path: string; readonly KeyPath: string };
    readonly HttpsRedirect: boolean;
    readonly MaxBodyBytes: number;
  };
  readonly Storage: { readonly DataDir: string; /** ms */ readonly FlushInterval: number; readonly SessionHistory: number; readonly MinFreeBytes: number };
  readonly Auth: { readonly SigningKey: string };
  readonly Hub: {
    readonly MaximumReceiveMessageSize: number;
    /** ms */ readonly KeepAliveInterval: number;
    /** ms */ readonly ClientTimeout: number;
    readonly MaximumFrameSize: number;
    readonly MessagesPerTurn: number;
    readonly MessageRate: number;
    readonly MessageBurst: number;
    readonly UnauthenticatedMessageRate: number;
    readonly UnauthenticatedMessageBurst: number;
  };
}

/** Where an effective value came from, lowest precedence first (defaults < file < environment < flags). */
export type ConfigSource = 'default' | 'file' | 'env' | 'flag';

export interface LoadedConfig {
  readonly config: AppConfig;
  /** Source of every leaf key, by dot path ("VoiceService.ServerUrl", "ApiKeys"). */
  readonly sources: ReadonlyMap<string, ConfigSource>;
  /** The configuration file that was read, if any. */
  readonly file: string | undefined;
}
