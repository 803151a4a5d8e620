'use client';

import Link from 'next/link';
import { useActionState } from 'react';
import { useSearchParams } from 'next/navigation';
import { signIn, signUp } from './actions';

type ActionState = { error?: string; email?: string };

export function Login({ mode = 'signin' }: { mode?: 'signin' | 'signup' }) {
  const searchParams = useSearchParams();
  const redirect = searchParams.get('redirect');
  const priceId = searchParams.get('priceId');
  const [state, formAction, pending] = useActionState<ActionState, FormData>(
    mode === 'signin' ? signIn : signUp,
    { error: '' }
  );

  return (
    <div className="min-h-[100dvh] flex flex-col justify-center py-12 px-4">
      <form className="mx-auto w-full max-w-sm space-y-6" action={formAction}>
        <input type="hidden" name="redirect" value={redirect || ''} />
        <input type="hidden" name="priceId" value={priceId || ''} />
        <input name="email" type="email" defaultValue={state.email} required className="w-full border rounded px-3 py-2" />
        <input name="password" type="password" required minLength={8} className="w-full border rounded px-3 py-2" />
        {state?.error && <div className="text-red-500 text-sm">{state.error}</div>}
        <button type="submit" disabled={pending} className="w-full rounded-full bg-orange-500 text-white py-2">
          {mode === 'signin' ? 'Sign in' : 'Sign up'}
        </button>
        <Link href={mode === 'signin' ? '/sign-up' : '/sign-in'} className="block text-center text-sm">
          {mode === 'signin' ? 'Create an account' : 'Sign in to existing account'}
        </Link>
      </form>
    </div>
  );
}
