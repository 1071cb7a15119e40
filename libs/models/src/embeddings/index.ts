export * from './types';
export * from './openai-embedding-model';
export * from './config';
