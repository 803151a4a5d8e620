import Link from 'next/link';
import { Suspense } from 'react';
import { UserMenu } from '@/components/user-menu';

function Header() {
  return (
    <header className="border-b border-gray-200">
      <div className="max-w-7xl mx-auto px-4 py-4 flex justify-between items-center">
        <Link href="/" className="text-xl font-semibold text-gray-900">
          ACME
        </Link>
        <div className="flex items-center space-x-4">
          <Link href="/pricing" className="text-sm font-medium text-gray-700">
            Pricing
          </Link>
          <Suspense fallback={<div className="h-9" />}>
            <UserMenu />
          </Suspense>
        </div>
      </div>
    </header>
  );
}

export default function Layout({ children }: { children: React.ReactNode }) {
  return (
    <section className="flex flex-col min-h-screen">
      <Header />
      {children}
    </section>
  );
}
