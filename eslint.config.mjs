import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'data/**', 'sdk/**/dist/**', 'sdk/typescript/src/generated/**', 'web/dashboard/src/api-schema.ts', 'jest.config.js', 'test/conformance/reference-server.mts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The few plain CommonJS files (test helpers that run outside ts-jest).
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', Buffer: 'readonly', process: 'readonly', __dirname: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-eval': 'error',
      'no-new-func': 'error',
      'no-implied-eval': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
);
