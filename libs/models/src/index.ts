export * from './types';
export * from './errors';
export * from './usage';
export * from './openai-chat-model';
export * from './structured-step';
export * from './config';
export * from './embeddings';
export * from './nli';
