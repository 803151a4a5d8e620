'use client';

import Link from 'next/link';
import useSWR from 'swr';
import type { User } from '@/lib/db/schema';

const fetcher = (url: string) => fetch(url).then((res) => res.json());

export function UserMenu() {
  const { data: user } = useSWR<User>('/api/user', fetcher);

  if (!user) {
    return (
      <Link href="/sign-in" className="rounded-full bg-black px-4 py-2 text-sm text-white">
        Sign in
      </Link>
    );
  }
  return (
    <Link href="/dashboard" className="text-sm font-medium">
      {user.name || user.email}
    </Link>
  );
}
