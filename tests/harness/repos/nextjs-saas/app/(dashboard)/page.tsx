import Link from 'next/link';
import { ArrowRight, CreditCard, Database, Sparkles } from 'lucide-react';

export default function HomePage() {
  return (
    <main>
      <section className="py-20">
        <div className="max-w-7xl mx-auto px-4 text-center">
          <h1 className="text-4xl font-bold text-gray-900 sm:text-5xl">
            Ship your SaaS this weekend
          </h1>
          <p className="mt-3 text-lg text-gray-500">
            Auth, teams, Stripe subscriptions and a streaming AI assistant, wired up with
            Next.js, Postgres and Drizzle.
          </p>
          <Link
            href="/sign-up"
            className="mt-8 inline-flex items-center rounded-full bg-orange-500 px-6 py-3 text-white"
          >
            Get started <ArrowRight className="ml-2 h-4 w-4" />
          </Link>
        </div>
      </section>
      <section className="py-16 bg-white">
        <div className="max-w-7xl mx-auto px-4 grid gap-8 lg:grid-cols-3">
          <Feature icon={<Database />} title="Postgres + Drizzle" body="Typed schema, migrations and a seed script." />
          <Feature icon={<CreditCard />} title="Stripe" body="Checkout, customer portal and webhooks." />
          <Feature icon={<Sparkles />} title="AI assistant" body="Streaming chat for every team workspace." />
        </div>
      </section>
    </main>
  );
}

function Feature({ icon, title, body }: { icon: React.ReactNode; title: string; body: string }) {
  return (
    <div>
      <div className="h-12 w-12 rounded-md bg-orange-500 text-white flex items-center justify-center">{icon}</div>
      <h2 className="mt-5 text-lg font-medium text-gray-900">{title}</h2>
      <p className="mt-2 text-base text-gray-500">{body}</p>
    </div>
  );
}
